/**
 * The chat as data: a session's events folded into the items the chat view shows, in order.
 *
 * Pure (no DOM, no JupyterLab), so it is tested on recorded event lists and reused for a live turn
 * and for a reopened session alike. `apply` returns the ids of the items it added or changed, so
 * the view touches only those: 2,000 events must render in well under two seconds.
 */
import type { NiniEvent } from './api';

export type StepStatus = 'running' | 'succeeded' | 'failed';

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
}

export interface AssistantItem {
  kind: 'assistant';
  id: string;
  turnId: string | null;
  text: string;
  streaming: boolean;
}

export interface StepItem {
  kind: 'step';
  id: string;
  turnId: string | null;
  name: string;
  label: string;
  language: 'python' | 'r' | null;
  code: string | null;
  status: StepStatus;
  durationMs: number | null;
  error: { code: string; message: string; violations?: Violation[] } | null;
  stdout: string;
  stderr: string;
  artifacts: string[];
  datasetsSaved: string[];
  isolation: string | null;
  summary: string | null; // a task's one sentence
  parentId: string | null; // the task:* step this one ran inside
  background: boolean; // after the answer (a stop hook's work), not part of the answer
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

export interface EndItem {
  kind: 'end';
  id: string;
  turnId: string | null;
  endedBy: string;
  completedNormally: boolean;
  iterations: number;
}

export interface ApprovalItem {
  kind: 'approval';
  id: string;
  turnId: string | null;
  code: string;
  language: string;
  state: 'waiting' | 'approved' | 'refused';
}

export type ChatItem = UserItem | AssistantItem | StepItem | NoteItem | ErrorItem | EndItem | ApprovalItem;

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
    }
    return [...touched];
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
        return this.add({ kind: 'user', id: `u${event.seq}`, turnId, text: String(data.text ?? '') }).id;
      case 'assistant_delta': {
        let item = this.streamingAssistant;
        if (item === null) {
          item = this.add({ kind: 'assistant', id: `a${event.seq}`, turnId, text: '', streaming: true });
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
          return item.id;
        }
        return text ? this.add({ kind: 'assistant', id: `a${event.seq}`, turnId, text, streaming: false }).id : null;
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
          iterations: Number(data.iterations ?? 0)
        }).id;
      case 'stop_hook_note':
        return this.add({ kind: 'note', id: `n${event.seq}`, turnId, hook: String(data.hook ?? ''), text: String(data.text ?? '') }).id;
      case 'approval_required':
        return this.add({
          kind: 'approval',
          id: `approval:${data.id ?? event.seq}`,
          turnId,
          code: String(data.code ?? ''),
          language: String(data.language ?? 'python'),
          state: 'waiting'
        }).id;
      case 'approval_resolved': {
        const item = this.byId.get(`approval:${data.approval_id}`);
        if (item?.kind !== 'approval') {
          return null;
        }
        item.state = data.approved ? 'approved' : 'refused';
        return item.id;
      }
      default:
        return null;
    }
  }

  private startStep(event: NiniEvent): string {
    const data = event.data ?? {};
    const name = String(data.name ?? '');
    const args = data.arguments ?? {};
    const id = event.tool_call_id ?? `t${event.seq}`;
    const parent = this.openTask;
    const background = event.turn_id !== null && !this.userTurns.has(event.turn_id);
    const step = this.add<StepItem>({
      kind: 'step',
      id,
      turnId: event.turn_id,
      name,
      label: String(args.label ?? args.name ?? args.path ?? args.query ?? ''),
      language: codeLanguage(name),
      code: typeof args.code === 'string' ? args.code : null,
      status: 'running',
      durationMs: null,
      error: null,
      stdout: '',
      stderr: '',
      artifacts: [],
      datasetsSaved: [],
      isolation: null,
      summary: null,
      parentId: parent !== null && parent.turnId === event.turn_id ? parent.id : null,
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
    step.language = data.language === 'r' ? 'r' : data.language === 'python' ? 'python' : step.language;
    step.stdout = String(data.stdout ?? '');
    step.stderr = String(data.stderr ?? '');
    step.artifacts = Array.isArray(data.artifacts) ? data.artifacts.map(String) : [];
    step.datasetsSaved = Array.isArray(data.datasets_saved) ? data.datasets_saved.map(String) : [];
    step.isolation = data.isolation ? String(data.isolation) : null;
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
    step.status = data.success ? 'succeeded' : 'failed';
    step.durationMs = typeof data.duration_ms === 'number' ? data.duration_ms : null;
    if (!data.success && data.error) {
      step.error = {
        code: String(data.error.code ?? 'ERROR'),
        message: String(data.error.message ?? ''),
        violations: Array.isArray(data.error.violations) ? data.error.violations : undefined
      };
    }
    if (this.openTask === step) {
      this.openTask = null;
    }
    return step.id;
  }

  private findTask(command: string, turnId: string | null): StepItem | null {
    if (this.openTask !== null && this.openTask.name === command) {
      return this.openTask;
    }
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind === 'step' && item.name === command && item.turnId === turnId) {
        return item;
      }
    }
    return null;
  }
}
