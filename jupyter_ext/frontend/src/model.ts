/**
 * The chat as data: a session's events folded into the items the chat view shows, in order.
 *
 * Pure (no DOM, no JupyterLab), so it is tested on recorded event lists and reused for a live turn
 * and for a reopened session alike. `apply` returns the ids of the items it added or changed, so
 * the view touches only those: 2,000 events must render in well under two seconds.
 */
import type { NiniEvent } from './api';
import { RunTook, tookOf } from './footer';

/** `stopped`: ended CANCELED by the user's Stop (or the server's shutdown), not by a failure of its own. */
export type StepStatus = 'running' | 'succeeded' | 'failed' | 'stopped';

export interface Violation {
  rule?: string;
  name?: string;
  line?: number;
  column?: number;
  message: string;
}

export interface UserItem {
  kind: 'user';
  id: string;
  turnId: string | null;
  text: string;
  ts: string | null; // when it was asked (its event's time)
}

export interface AssistantItem {
  kind: 'assistant';
  id: string;
  turnId: string | null;
  text: string;
  streaming: boolean;
  ts: string | null; // when it was answered
}

export interface StepItem {
  kind: 'step';
  id: string;
  turnId: string | null;
  name: string;
  label: string;
  language: 'python' | 'r' | null;
  code: string | null;
  codeChars: number | null; // the whole code's length when the event carried only its start (else null)
  status: StepStatus;
  durationMs: number | null;
  error: {
    code: string;
    message: string;
    line?: number;
    violations?: Violation[];
  } | null;
  stdout: string;
  stderr: string;
  artifacts: string[];
  datasetsSaved: string[];
  isolation: string | null;
  outputs: StepOutput[]; // the run's outputs in order (empty: show stdout and stderr)
  table: TablePreview | null; // output_df's first rows
  summary: string | null; // a task's one sentence
  parentId: string | null; // the task:* step this one ran inside
  background: boolean; // after the answer (a stop hook's work), not part of the answer
}

/** One output of a step's run as its `code_execution` event carries it: nbformat v4, bounded
 * (nini.skills.step_outputs). */
export interface StepOutput {
  output_type: 'stream' | 'display_data' | 'execute_result' | 'error';
  name?: string;
  text?: string;
  data?: Record<string, string>;
  ename?: string;
  evalue?: string;
  traceback?: string[];
}

/** output_df's first rows (a `code_execution` event's `table`). */
export interface TablePreview {
  columns: string[];
  dtypes: string[];
  rows: unknown[][];
  shape: [number, number];
}

export interface NoteItem {
  kind: 'note';
  id: string;
  turnId: string | null;
  hook: string;
  text: string;
}

export interface ErrorItem {
  kind: 'error';
  id: string;
  turnId: string | null;
  code: string;
  message: string;
}

/** The summary of the session's older turns (its latest `context_summary` event): one note, shown
 * collapsed atop the conversation. Its text is model-made in part: shown as text, never as HTML. */
export interface EarlierItem {
  kind: 'earlier';
  id: typeof EARLIER_ID;
  turnId: string | null; // the turn that folded last
  text: string; // the summary without its title line (the note's own title says it)
  summarizedTurns: number;
}

export const EARLIER_ID = 'earlier';

/** A `context_summary` event's text without its first line, a title like "Earlier in this session
 * (12 turns summarized)" that the note's own summary line says in the sidebar's language. */
export function summaryBody(text: string): string {
  const cut = text.indexOf('\n');
  return cut < 0 ? '' : text.slice(cut + 1);
}

export interface EndItem {
  kind: 'end';
  id: string;
  turnId: string | null;
  endedBy: string;
  completedNormally: boolean;
  iterations: number;
  took: RunTook | null; // duration, steps, tokens and cost (./footer)
}

/** How a step waiting for a person ended: allowed once, allowed for the session, rejected,
 * refused after nobody answered, or its run stopped while it waited. */
export type ApprovalState =
  'waiting' | 'once' | 'session' | 'reject' | 'timed_out' | 'stopped';

export interface ApprovalItem {
  kind: 'approval';
  id: string; // `approval:<approval id>`
  approvalId: string;
  turnId: string | null;
  stepId: string | null; // the step that asks (the one running when it asked): the card goes in its card
  code: string;
  language: string;
  state: ApprovalState;
}

/** A cell the agent proposed (a succeeded `propose_cell` call), as the proposals endpoint has it. */
export interface Proposal {
  proposal_id: string;
  cell_type: 'code' | 'markdown';
  language: string;
  source: string;
  position: number;
  replaces: number | null;
  diff: string | null;
  status: 'pending' | 'accepted' | 'rejected';
  ran: boolean | null;
  decided_at?: string | null;
}

export interface ProposalItem {
  kind: 'proposal';
  id: string; // `proposal:<tool call id>`
  turnId: string | null;
  proposal: Proposal;
}

export type ChatItem =
  | UserItem
  | AssistantItem
  | StepItem
  | NoteItem
  | ErrorItem
  | EndItem
  | EarlierItem
  | ApprovalItem
  | ProposalItem;

export const PROPOSE_CELL = 'propose_cell';

/** A `propose_cell` result (or a proposals endpoint record) as a `Proposal`; null when not one. */
export function toProposal(id: string, result: any): Proposal | null {
  if (
    result === null ||
    typeof result !== 'object' ||
    typeof result.source !== 'string'
  ) {
    return null;
  }
  const status =
    result.status === 'accepted' || result.status === 'rejected'
      ? result.status
      : 'pending';
  return {
    proposal_id: id,
    cell_type: result.cell_type === 'markdown' ? 'markdown' : 'code',
    language: String(result.language ?? 'python'),
    source: result.source,
    position: Math.max(0, Number(result.position ?? 0) | 0),
    replaces: typeof result.replaces === 'number' ? result.replaces : null,
    diff: typeof result.diff === 'string' ? result.diff : null,
    status,
    ran: typeof result.ran === 'boolean' ? result.ran : null,
    decided_at: result.decided_at ?? null
  };
}

const TASK_PREFIX = 'task:';

function codeLanguage(name: string): 'python' | 'r' | null {
  if (name === 'run_code') {
    return 'python';
  }
  if (name === 'run_r_code') {
    return 'r';
  }
  return null;
}

export class ChatModel {
  readonly items: ChatItem[] = [];
  lastSeq = 0;
  private byId = new Map<string, ChatItem>();
  private streamingAssistant: AssistantItem | null = null;
  private openTask: StepItem | null = null;
  private answeredTurns = new Set<string>(); // turns whose done came: later steps are background
  private userTurns = new Set<string>();
  private refused = false; // a person refused the step now ending: its CANCELED is theirs, not a Stop

  get(id: string): ChatItem | undefined {
    return this.byId.get(id);
  }

  /** Whether a turn is going: a user message with no `done` yet. */
  get running(): boolean {
    for (const turn of this.userTurns) {
      if (!this.answeredTurns.has(turn)) {
        return true;
      }
    }
    return false;
  }

  /** Fold `events` in (those at or below `lastSeq` are skipped); the ids added or changed, in order. */
  apply(events: NiniEvent[]): string[] {
    const touched = new Set<string>();
    for (const event of events) {
      if (event.seq <= this.lastSeq) {
        continue;
      }
      this.lastSeq = event.seq;
      const id = this.fold(event);
      if (id !== null) {
        touched.add(id);
      }
      if (event.type === 'tool_result') {
        const proposal = this.proposalOf(event);
        if (proposal !== null) {
          touched.add(proposal);
        }
      }
      if (event.type === 'done' && event.data?.ended_by === 'canceled') {
        this.stopLeftovers(event.turn_id).forEach(left => touched.add(left));
      }
    }
    return [...touched];
  }

  /** The proposals of the session, in order. */
  get proposals(): ProposalItem[] {
    return this.items.filter(
      (item): item is ProposalItem => item.kind === 'proposal'
    );
  }

  /**
   * Bring a proposal up to date with what the server recorded (the proposals endpoint, after a
   * reload or a decision): its item id, or null when nothing changed. A proposal not seen as an
   * event yet is added at the end.
   */
  setProposal(proposal: Proposal, turnId: string | null = null): string | null {
    const id = `proposal:${proposal.proposal_id}`;
    const item = this.byId.get(id);
    if (item === undefined) {
      return this.add<ProposalItem>({
        kind: 'proposal',
        id,
        turnId,
        proposal: { ...proposal }
      }).id;
    }
    if (
      item.kind !== 'proposal' ||
      JSON.stringify(item.proposal) ===
        JSON.stringify({ ...item.proposal, ...proposal })
    ) {
      return null;
    }
    item.proposal = { ...item.proposal, ...proposal };
    return id;
  }

  /** A succeeded `propose_cell` call's result: a pending proposal, shown after its step. */
  private proposalOf(event: NiniEvent): string | null {
    const data = event.data ?? {};
    if (
      data.name !== PROPOSE_CELL ||
      !data.success ||
      !event.tool_call_id ||
      this.byId.has(`proposal:${event.tool_call_id}`)
    ) {
      return null;
    }
    const proposal = toProposal(event.tool_call_id, data.result);
    return proposal === null ? null : this.setProposal(proposal, event.turn_id);
  }

  private add<T extends ChatItem>(item: T): T {
    this.items.push(item);
    this.byId.set(item.id, item);
    return item;
  }

  private fold(event: NiniEvent): string | null {
    const data = event.data ?? {};
    const turnId = event.turn_id;
    switch (event.type) {
      case 'user_message':
        this.streamingAssistant = null;
        if (turnId) {
          this.userTurns.add(turnId);
        }
        return this.add({
          kind: 'user',
          id: `u${event.seq}`,
          turnId,
          text: String(data.text ?? ''),
          ts: event.ts ?? null
        }).id;
      case 'assistant_delta': {
        let item = this.streamingAssistant;
        if (item === null) {
          item = this.add({
            kind: 'assistant',
            id: `a${event.seq}`,
            turnId,
            text: '',
            streaming: true,
            ts: event.ts ?? null
          });
          this.streamingAssistant = item;
        }
        item.text += String(data.text ?? '');
        return item.id;
      }
      case 'assistant_message': {
        const text = String(data.text ?? '');
        const item = this.streamingAssistant;
        this.streamingAssistant = null;
        if (item !== null) {
          item.text = text || item.text;
          item.streaming = false;
          item.ts = event.ts ?? item.ts;
          return item.id;
        }
        return text
          ? this.add({
              kind: 'assistant',
              id: `a${event.seq}`,
              turnId,
              text,
              streaming: false,
              ts: event.ts ?? null
            }).id
          : null;
      }
      case 'tool_call':
        return this.startStep(event);
      case 'code_execution':
        return this.execution(event);
      case 'tool_result':
        return this.endStep(event);
      case 'task_summary': {
        const task = this.findTask(String(data.command ?? ''), turnId);
        if (task === null) {
          return null;
        }
        task.summary = String(data.summary ?? '');
        return task.id;
      }
      case 'error':
        return this.add({
          kind: 'error',
          id: `e${event.seq}`,
          turnId,
          code: String(data.code ?? 'ERROR'),
          message: String(data.message ?? '')
        }).id;
      case 'done':
        this.streamingAssistant = null;
        this.openTask = null;
        if (turnId) {
          this.answeredTurns.add(turnId);
        }
        return this.add({
          kind: 'end',
          id: `d${event.seq}`,
          turnId,
          endedBy: String(data.ended_by ?? ''),
          completedNormally: Boolean(data.completed_normally),
          iterations: Number(data.iterations ?? 0),
          took: tookOf(data)
        }).id;
      case 'context_summary':
        return this.earlier(event);
      case 'stop_hook_note':
        return this.add({
          kind: 'note',
          id: `n${event.seq}`,
          turnId,
          hook: String(data.hook ?? ''),
          text: String(data.text ?? '')
        }).id;
      case 'approval_required': {
        const approvalId = String(data.approval_id ?? event.seq);
        return this.add<ApprovalItem>({
          kind: 'approval',
          id: `approval:${approvalId}`,
          approvalId,
          turnId,
          stepId: this.runningStep()?.id ?? null,
          code: String(data.code ?? ''),
          language: String(data.language ?? 'python'),
          state: 'waiting'
        }).id;
      }

      case 'proposal_decided': {
        const item = this.byId.get(`proposal:${event.tool_call_id}`);
        if (item?.kind !== 'proposal') {
          return null;
        }
        item.proposal = {
          ...item.proposal,
          status: data.decision === 'accepted' ? 'accepted' : 'rejected',
          ran: typeof data.ran === 'boolean' ? data.ran : item.proposal.ran,
          decided_at: event.ts ?? item.proposal.decided_at
        };
        return item.id;
      }
      case 'approval_resolved': {
        const item = this.byId.get(`approval:${data.approval_id}`);
        if (item?.kind !== 'approval') {
          return null;
        }
        const how = String(data.how ?? '');
        item.state =
          how === 'once' || how === 'session' || how === 'timed_out'
            ? how
            : data.approved
              ? 'once'
              : 'reject';
        this.refused = item.state === 'reject' || item.state === 'timed_out';
        return item.id;
      }
      default:
        return null;
    }
  }

  /** The summary of the older turns: the first one makes the item (first in `items`: it is shown
   * atop the conversation), a later one replaces its content. */
  private earlier(event: NiniEvent): string {
    const data = event.data ?? {};
    const content = {
      turnId: event.turn_id,
      text: summaryBody(String(data.text ?? '')),
      summarizedTurns: Math.max(0, Number(data.summarized_turns ?? 0) || 0)
    };
    const item = this.byId.get(EARLIER_ID);
    if (item?.kind === 'earlier') {
      Object.assign(item, content);
      return item.id;
    }
    const added: EarlierItem = { kind: 'earlier', id: EARLIER_ID, ...content };
    this.items.unshift(added);
    this.byId.set(added.id, added);
    return added.id;
  }

  private startStep(event: NiniEvent): string {
    const data = event.data ?? {};
    const name = String(data.name ?? '');
    const args = data.arguments ?? {};
    const id = event.tool_call_id ?? `t${event.seq}`;
    const parent = this.openTask;
    const background =
      event.turn_id !== null && !this.userTurns.has(event.turn_id);
    const step = this.add<StepItem>({
      kind: 'step',
      id,
      turnId: event.turn_id,
      name,
      label: String(args.label ?? args.name ?? args.path ?? args.query ?? ''),
      language: codeLanguage(name),
      code: typeof args.code === 'string' ? args.code : null,
      codeChars: typeof data.code_chars === 'number' ? data.code_chars : null,
      status: 'running',
      durationMs: null,
      error: null,
      stdout: '',
      stderr: '',
      artifacts: [],
      datasetsSaved: [],
      isolation: typeof data.isolation === 'string' ? data.isolation : null, // known from the start
      outputs: [],
      table: null,
      summary: null,
      parentId:
        parent !== null && parent.turnId === event.turn_id ? parent.id : null,
      background
    });
    if (name.startsWith(TASK_PREFIX)) {
      this.openTask = step;
    }
    this.streamingAssistant = null;
    return step.id;
  }

  private execution(event: NiniEvent): string | null {
    const step = this.byId.get(event.tool_call_id ?? '');
    if (step?.kind !== 'step') {
      return null;
    }
    const data = event.data ?? {};
    step.language =
      data.language === 'r'
        ? 'r'
        : data.language === 'python'
          ? 'python'
          : step.language;
    step.stdout = String(data.stdout ?? '');
    step.stderr = String(data.stderr ?? '');
    step.artifacts = Array.isArray(data.artifacts)
      ? data.artifacts.map(String)
      : [];
    step.datasetsSaved = Array.isArray(data.datasets_saved)
      ? data.datasets_saved.map(String)
      : [];
    step.isolation = data.isolation ? String(data.isolation) : step.isolation;
    step.outputs = Array.isArray(data.outputs)
      ? data.outputs.filter((o: any) => o && typeof o === 'object')
      : [];
    step.table =
      data.table &&
      Array.isArray(data.table.columns) &&
      Array.isArray(data.table.rows)
        ? data.table
        : null;
    if (!step.label && data.label) {
      step.label = String(data.label);
    }
    return step.id;
  }

  private endStep(event: NiniEvent): string | null {
    const step = this.byId.get(event.tool_call_id ?? '');
    if (step?.kind !== 'step') {
      return null;
    }
    const data = event.data ?? {};
    const canceled =
      !data.success && data.error?.code === 'CANCELED' && !this.refused;
    step.status = data.success ? 'succeeded' : canceled ? 'stopped' : 'failed';
    this.refused = false;
    step.durationMs =
      typeof data.duration_ms === 'number' ? data.duration_ms : null;
    if (!data.success && data.error) {
      step.error = {
        code: String(data.error.code ?? 'ERROR'),
        message: String(data.error.message ?? ''),
        line: typeof data.error.line === 'number' ? data.error.line : undefined,
        violations: Array.isArray(data.error.violations)
          ? data.error.violations
          : undefined
      };
    }
    if (this.openTask === step) {
      this.openTask = null;
    }
    return step.id;
  }

  /** The step started last that is still running (a step asks for approval before its code runs). */
  private runningStep(): StepItem | null {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind === 'step' && item.status === 'running') {
        return item;
      }
    }
    return null;
  }

  /** A stopped run's steps still running and steps still waiting for a person (a wait cut by Stop
   * says nothing more): stopped; their ids. */
  private stopLeftovers(turnId: string | null): string[] {
    const left: string[] = [];
    for (const item of this.items) {
      if (
        item.kind === 'step' &&
        item.status === 'running' &&
        item.turnId === turnId
      ) {
        item.status = 'stopped';
        left.push(item.id);
      } else if (item.kind === 'approval' && item.state === 'waiting') {
        item.state = 'stopped'; // one run per session: the wait was this run's
        left.push(item.id);
      }
    }
    return left;
  }

  private findTask(command: string, turnId: string | null): StepItem | null {
    if (this.openTask !== null && this.openTask.name === command) {
      return this.openTask;
    }
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (
        item.kind === 'step' &&
        item.name === command &&
        item.turnId === turnId
      ) {
        return item;
      }
    }
    return null;
  }
}
