/**
 * Preference learning's data shapes and the pure helpers the views share (testable without a DOM):
 * the known signals, the line a recorded feedback shows, how a value is typed in and shown.
 */
import { __, N_ } from './i18n';

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

/** The signals nini knows (nini.memory.preferences.rules.SIGNALS), with what each asks for (shown
 * through `__(label)`). */
export const SIGNALS: Array<[string, string]> = [
  ['no_exclamation', N_('No exclamation marks')],
  ['concise', N_('Shorter, conclusion first')],
  ['detailed', N_('More detail')],
  ['formal', N_('Formal tone')],
  ['casual', N_('Casual tone')],
  ['chinese', N_('Answer in Chinese')],
  ['english', N_('Answer in English')],
  ['fewer_decimals', N_('Fewer decimals')],
  ['minimal_charts', N_('Minimal charts')],
  ['no_emoji', N_('No emoji')]
];

/** The words of a feedback's action (shown through `__(word)`). */
const ACTIONS: Record<FeedbackAction, string> = {
  accept: N_('accept'),
  reject: N_('reject'),
  partial: N_('partial')
};

/** "Recorded: reject · punctuation.no_exclamation 0.50 → 0.70" */
export function describeLearned(
  action: FeedbackAction,
  learned: Learned
): string {
  const changes = learned.changes.map(
    change =>
      `${change.key} ${change.before.toFixed(2)} → ${change.after.toFixed(2)}`
  );
  const canceled = learned.canceled.map(name => __('%1 cancelled out', name));
  return [
    __('Recorded: %1', __(ACTIONS[action] ?? action)),
    ...changes,
    ...canceled
  ].join(' · ');
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
