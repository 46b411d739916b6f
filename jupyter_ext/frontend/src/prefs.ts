/**
 * Preference learning's data shapes and the pure helpers the views share (testable without a DOM):
 * the known signals, the line a recorded feedback shows, how a value is typed in and shown.
 */

export interface Preference {
  id: number;
  project_id: string | null;
  key: string;
  value: unknown;
  source: 'explicit' | 'implicit';
  confidence: number;
  evidence_count: number;
  updated_at: number;
}

export interface PreferenceList {
  project_id: string;
  preferences: Preference[];
}

export interface PreferencePreview {
  block: string;
  preferences: Array<Preference & { line: string }>;
}

export interface Switches {
  learning: boolean;
  injection: boolean;
}

export type FeedbackAction = 'accept' | 'reject' | 'partial';

export interface FeedbackChange {
  id: number;
  key: string;
  before: number;
  after: number;
  why: string;
}

export interface Learned {
  feedback_id: number;
  changes: FeedbackChange[];
  canceled: string[];
}

/** The signals nini knows (nini.memory.preferences.rules.SIGNALS), with what each asks for. */
export const SIGNALS: Array<[string, string]> = [
  ['no_exclamation', 'No exclamation marks'],
  ['concise', 'Shorter, conclusion first'],
  ['detailed', 'More detail'],
  ['formal', 'Formal tone'],
  ['casual', 'Casual tone'],
  ['chinese', 'Answer in Chinese'],
  ['english', 'Answer in English'],
  ['fewer_decimals', 'Fewer decimals'],
  ['minimal_charts', 'Minimal charts'],
  ['no_emoji', 'No emoji']
];

/** "Recorded: reject · punctuation.no_exclamation 0.50 → 0.70" */
export function describeLearned(action: FeedbackAction, learned: Learned): string {
  const changes = learned.changes.map(change => `${change.key} ${change.before.toFixed(2)} → ${change.after.toFixed(2)}`);
  const canceled = learned.canceled.map(name => `${name} cancelled out`);
  return [`Recorded: ${action}`, ...changes, ...canceled].join(' · ');
}

/** A value as the user typed it: JSON when it parses (true, 2, "x"), else the text itself. */
export function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function showValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
