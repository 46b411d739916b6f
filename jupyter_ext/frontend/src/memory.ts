/**
 * Experience memory as data: the shapes of `/nini/api/experience` and what the Experience tab
 * shows of them (scores, visible entries, INDEX problems, a run's records newest first).
 *
 * Pure (no DOM, no JupyterLab), so it is tested without a browser.
 */
import type { NiniEvent } from './api';
import { __, N_ } from './i18n';

export type Level = 'team' | 'project';
export const LEVELS: Level[] = ['team', 'project'];
/** The fixed values of experience memory a user reads: libraries, types, strengths, statuses. */
const TERMS: Record<string, string> = {
  team: N_('team'),
  project: N_('project'),
  standard: N_('standard'),
  knowledge: N_('knowledge'),
  experience: N_('experience'),
  hypothesis: N_('hypothesis'),
  validated: N_('validated'),
  enforced: N_('enforced'),
  active: N_('active'),
  deprecated: N_('deprecated')
};

/** One of those values in the sidebar's language (any other as it is). */
export function term(value: string): string {
  return value in TERMS ? __(TERMS[value]) : value;
}

export interface ExperienceCandidate {
  id: string;
  title: string;
  decision: string;
  alternatives: string[];
  signal: string;
  level: Level;
  type: 'standard' | 'knowledge';
  stage: string;
  trigger: string;
  notes: string[];
  [key: string]: unknown;
}

export interface Evaluation {
  structure: number;
  judgement: number;
  reusability: number;
  fit: number;
  overall: number;
  notes: string[];
}

export interface PendingItem {
  number: number;
  candidate: ExperienceCandidate;
  evaluation: Evaluation;
}

export interface PendingView {
  candidates: PendingItem[];
  asked: boolean;
  problems: string[];
}

export interface Dropped {
  title: string;
  reason: string;
  why: string;
}

export interface CaptureResult {
  kept: ExperienceCandidate[];
  dropped: Dropped[];
  problems: string[];
}

export interface PlanAction {
  kind: 'keep' | 'merge' | 'supersede';
  level: Level;
  candidates: string[];
  titles: string[];
  replaces: string[];
  reason: string;
}

export interface ExperiencePlan {
  actions: PlanAction[];
  plan: string[];
}

export interface ExperienceEntry {
  id: string;
  level: Level;
  title: string;
  type: string;
  status: string;
  scope: string;
  strength: string;
  trigger: string;
  reference: string;
  [key: string]: unknown;
}

export interface ExperienceEntries {
  entries: ExperienceEntry[];
  problems: Partial<Record<Level, string[]>>;
}

export interface ExperienceMatch {
  level: string;
  id: string;
  title: string;
  file: string;
  score: number;
  [key: string]: unknown;
}

export interface ExperienceRecord {
  type: 'experience_matched' | 'experience_captured';
  turn_id: string | null;
  seq: number;
  ts: string;
  data: any;
}

/** The four scores of stage 2, in the order they are shown (labels shown through `__(label)`). */
export const SCORES: [keyof Evaluation, string][] = [
  ['structure', N_('Structure')],
  ['judgement', N_('Judgement')],
  ['reusability', N_('Reusability')],
  ['fit', N_('Fit')]
];

/** A score in [0, 1] as two decimals ("—" when missing). */
export function scoreText(value: unknown): string {
  return typeof value === 'number' && Number.isFinite(value)
    ? value.toFixed(2)
    : '—';
}

/** The entries to list: active ones, deprecated too when asked; team before project, then by id. */
export function visibleEntries(
  entries: ExperienceEntry[],
  showDeprecated: boolean
): ExperienceEntry[] {
  const rank = (level: string) => (level === 'team' ? 0 : 1);
  return entries
    .filter(entry => showDeprecated || entry.status === 'active')
    .sort((a, b) => rank(a.level) - rank(b.level) || a.id.localeCompare(b.id));
}

/** The INDEX.md problems of both libraries, one line each, prefixed by the library. */
export function problemLines(
  problems: ExperienceEntries['problems'] | null | undefined
): string[] {
  return Object.entries(problems ?? {}).flatMap(([level, lines]) =>
    (lines ?? []).map(line => `${term(level)}: ${line}`)
  );
}

/** The records of a session, newest first. */
export function newestFirst(records: ExperienceRecord[]): ExperienceRecord[] {
  return [...records].sort((a, b) => b.seq - a.seq);
}

/** What a record says, as a heading and its lines. */
export function describeRecord(record: ExperienceRecord): {
  heading: string;
  lines: string[];
} {
  const data = record.data ?? {};
  const stage = data.stage ? __(' (stage: %1)', data.stage) : '';
  if (record.type === 'experience_matched') {
    const matches: ExperienceMatch[] = Array.isArray(data.matches)
      ? data.matches
      : [];
    return {
      heading: __('Warned at the start of the run%1', stage),
      lines: matches.map(match =>
        __(
          '%1 · %2 %3 · score %4',
          match.title,
          term(match.level),
          match.id,
          scoreText(match.score)
        )
      )
    };
  }
  const kept: string[] = Array.isArray(data.kept) ? data.kept.map(String) : [];
  const dropped: Dropped[] = Array.isArray(data.dropped) ? data.dropped : [];
  return {
    heading: __(
      'Captured after the run%1: %2 kept, %3 dropped',
      stage,
      kept.length,
      dropped.length
    ),
    lines: [
      ...kept.map(title => __('Kept: %1', title)),
      ...dropped.map(item =>
        __('Dropped: %1 (%2)', item.title, item.why || item.reason)
      )
    ]
  };
}

/** Whether events of the chat's socket change what the Experience tab shows: `pending` (new
 * candidates were captured) and `run` (the run's records). */
export function experienceChanges(events: NiniEvent[]): {
  run: boolean;
  pending: boolean;
} {
  let run = false;
  let pending = false;
  for (const event of events) {
    if (event.type === 'experience_matched') {
      run = true;
    } else if (event.type === 'experience_captured') {
      run = pending = true;
    } else if (
      event.type === 'stop_hook_note' &&
      event.data?.hook === 'experience_capture'
    ) {
      pending = true;
    }
  }
  return { run, pending };
}

/** The ids and targets of a plan: the chosen candidates, in the order shown, each to its library. */
export function planRequest(
  chosen: { candidate: ExperienceCandidate; target: Level }[]
): { ids: string[]; targets: Record<string, Level> } {
  const targets: Record<string, Level> = {};
  for (const { candidate, target } of chosen) {
    targets[candidate.id] = target;
  }
  return { ids: chosen.map(item => item.candidate.id), targets };
}
