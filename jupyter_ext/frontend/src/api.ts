/**
 * The client of nini's REST API (`/nini/api/...`) and its event socket.
 *
 * Every reply is an envelope: `{ok: true, data}` or `{ok: false, error: {code, message}}`. A failed
 * request becomes a `NiniApiError` whose message is the envelope's (never a stack trace), so a
 * view can show it as it is.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { NotebookJson } from './context';
import { Language, language } from './i18n';
import type {
  CaptureResult,
  ExperienceCandidate,
  ExperienceEntries,
  ExperiencePlan,
  ExperienceRecord,
  Level,
  PendingView
} from './memory';
import type { Proposal } from './model';
import type {
  FeedbackAction,
  Learned,
  Preference,
  PreferenceList,
  PreferencePreview,
  Switches
} from './prefs';

export class NiniApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details: any = null
  ) {
    super(message);
  }
}

/** Where a turn asked from a notebook runs its code: nini's sandbox (with copies of the notebook's
 * variables) or the notebook's own kernel (not sandboxed). */
export type RunWhere = 'sandbox' | 'kernel';

export type ApprovalDecision = 'once' | 'session' | 'reject';

export interface ApprovalsState {
  required: boolean;
  allowed_for_session: boolean;
  waiting: {
    approval_id: string;
    language: string;
    code: string;
    notice: string;
    waiting_s: number;
  }[];
}

export interface SessionInfo {
  id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
}

export interface SkillRecord {
  name: string;
  type: 'function' | 'markdown';
  description: string;
  category: string;
  enabled: boolean;
  source?: string;
  location?: string;
  [key: string]: unknown;
}

/** A file read as text by nini (`NiniApi.readText`): `encoding` a Python codec name (`utf-8`, `gb18030`, `cp1252`...). */
export interface TextFile {
  path: string;
  text: string;
  encoding: string;
  sep: string | null; // a text table's separator, as load_dataset would guess it
  size_bytes: number;
  truncated: boolean;
}

export interface ProviderInfo {
  name: string;
  kind: string;
  base_url?: string | null;
  model?: string | null;
  api_key_env?: string | null;
  vision_models?: string[];
  enabled?: boolean;
  input_per_mtok?: number | null; // the price of a million prompt tokens (a turn's cost; optional)
  output_per_mtok?: number | null;
  currency?: string | null; // of the prices; unset: USD
  usable?: boolean;
  reason?: string | null;
}

export interface ModelsInfo {
  providers: ProviderInfo[];
  purposes: Record<
    string,
    {
      chain: { provider: string; model: string }[];
      skipped?: { provider: string; reason: string }[];
    }
  >;
}

export interface ReportInfo {
  title: string;
  created_at: string;
  tool_call_id: string; // the generate_report call: the run a feedback on the report names
  files: Record<string, string>;
  charts: { name: string; formats: Record<string, string> }[];
}

/** One event of a session, as the socket and the store carry it. */
export interface NiniEvent {
  seq: number;
  type: string;
  session_id?: string;
  turn_id: string | null;
  tool_call_id: string | null;
  ts?: string;
  data: any;
}

/** The body of an ask: the question, where its code runs (see `NiniApi.ask`) and the notebook's context. */
function turnBody(
  message: string,
  where?: { kernelId: string; mode: RunWhere } | null,
  notebook?: NotebookJson | null
): Record<string, unknown> {
  const body: Record<string, unknown> = { message };
  if (where) {
    body[where.mode === 'kernel' ? 'kernel_id' : 'notebook_kernel_id'] =
      where.kernelId;
  }
  if (notebook) {
    body.notebook = notebook;
  }
  return body;
}

export class NiniApi {
  constructor(
    readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  /** `fetch` one endpoint under `/nini/api/` and unwrap its envelope. */
  async request<T>(path: string, init: RequestInit = {}): Promise<T> {
    const url = URLExt.join(this.settings.baseUrl, 'nini/api', path);
    // the sidebar's language: the server words its refusals, previews and templates in it (ui.language auto)
    const headers = new Headers(init.headers);
    headers.set('X-Nini-Language', language());
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(
        url,
        { ...init, headers },
        this.settings
      );
    } catch (error) {
      throw new NiniApiError(
        'NETWORK',
        `the server cannot be reached (${String(error)})`,
        0
      );
    }
    let body: any = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (!response.ok || !body || body.ok !== true) {
      const error = body?.error ?? {};
      throw new NiniApiError(
        error.code ?? `HTTP_${response.status}`,
        error.message ?? response.statusText,
        response.status,
        error.details ?? null
      );
    }
    return body.data as T;
  }

  private send<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.request<T>(path, {
      method,
      body: body === undefined ? undefined : JSON.stringify(body)
    });
  }

  /** The caller's sessions, newest first; `query`: those whose title or conversation holds it. */
  listSessions(query = ''): Promise<SessionInfo[]> {
    return this.request(
      query ? `sessions?q=${encodeURIComponent(query)}` : 'sessions'
    );
  }

  /** Give a session of yours a new title: the session as stored now. */
  renameSession(sessionId: string, title: string): Promise<SessionInfo> {
    return this.send('PATCH', `sessions/${encodeURIComponent(sessionId)}`, {
      title
    });
  }

  /** Delete a session of yours for good (CONFLICT while it runs). */
  /** One tool call of a session with its arguments whole (a long step's code: its event carried its start). */
  toolCall(
    sessionId: string,
    callId: string
  ): Promise<{ id: string; arguments: Record<string, any> | null }> {
    return this.request(
      `sessions/${encodeURIComponent(sessionId)}/tool-calls/${encodeURIComponent(callId)}`
    );
  }

  deleteSession(sessionId: string): Promise<{ deleted: string }> {
    return this.send('DELETE', `sessions/${encodeURIComponent(sessionId)}`);
  }

  createSession(title: string): Promise<SessionInfo> {
    return this.send('POST', 'sessions', { title });
  }

  /**
   * Start a turn; `notebook` is what the user's notebook shows (see `notebookContext`). `where` is
   * where its code runs: `sandbox` in the session's sandboxed kernel, with copies of that notebook
   * kernel's variables the agent asks for; `kernel` in that notebook kernel (each step asks first).
   */
  ask(
    sessionId: string,
    message: string,
    where?: { kernelId: string; mode: RunWhere } | null,
    notebook?: NotebookJson | null
  ): Promise<{ turn_id: string; notice?: string }> {
    return this.send(
      'POST',
      `sessions/${encodeURIComponent(sessionId)}/ask`,
      turnBody(message, where, notebook)
    );
  }

  /** Start a turn in a new session, which the server makes only once the ask is accepted (a refused
   * ask, say for want of a model, leaves no empty session behind); `title` defaults to the question's start. */
  askNew(
    message: string,
    where?: { kernelId: string; mode: RunWhere } | null,
    notebook?: NotebookJson | null,
    title?: string
  ): Promise<{ turn_id: string; session_id: string; notice?: string }> {
    return this.send('POST', 'ask', {
      ...turnBody(message, where, notebook),
      ...(title ? { title } : {})
    });
  }

  listProposals(sessionId: string): Promise<Proposal[]> {
    return this.request(`sessions/${encodeURIComponent(sessionId)}/proposals`);
  }

  /** Record the user's click on a proposal: accepted (and whether it ran) or rejected. */
  decideProposal(
    sessionId: string,
    proposalId: string,
    decision: 'accept' | 'reject',
    ran?: boolean
  ): Promise<Proposal> {
    const body =
      decision === 'accept' ? { decision, ran: Boolean(ran) } : { decision };
    return this.send(
      'POST',
      `sessions/${encodeURIComponent(sessionId)}/proposals/${encodeURIComponent(proposalId)}`,
      body
    );
  }

  cancel(sessionId: string): Promise<{ canceled: boolean }> {
    return this.send(
      'POST',
      `sessions/${encodeURIComponent(sessionId)}/cancel`,
      {}
    );
  }

  /** Whether steps in the user's own kernel ask first on this server. */
  approvalPolicy(): Promise<{ required: boolean; timeout_s: number }> {
    return this.request('approvals');
  }

  /** Whether steps in the user's kernel ask, whether this session's are allowed, and those waiting. */
  approvals(sessionId: string): Promise<ApprovalsState> {
    return this.request(`sessions/${encodeURIComponent(sessionId)}/approvals`);
  }

  /** A person's answer to a step waiting to run in their kernel. */
  decideApproval(
    sessionId: string,
    approvalId: string,
    decision: ApprovalDecision
  ): Promise<unknown> {
    return this.send(
      'POST',
      `sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(approvalId)}`,
      {
        decision
      }
    );
  }

  /** Withdraw "allow for this session": the next step in the user's kernel asks again. */
  revokeSessionApproval(sessionId: string): Promise<unknown> {
    return this.send(
      'DELETE',
      `sessions/${encodeURIComponent(sessionId)}/approvals/session`
    );
  }

  listSkills(): Promise<SkillRecord[]> {
    return this.request('skills');
  }

  skillProblems(): Promise<any> {
    return this.request('skill-problems');
  }

  setSkillEnabled(
    name: string,
    enabled: boolean,
    type: string
  ): Promise<SkillRecord> {
    return this.send(
      'PUT',
      `skills/${encodeURIComponent(name)}/enabled?type=${type}`,
      { enabled }
    );
  }

  createSkill(fields: {
    name: string;
    description: string;
    category?: string;
  }): Promise<SkillRecord> {
    return this.send('POST', 'skills', { ...fields, type: 'markdown' });
  }

  skillSource(name: string): Promise<{
    name: string;
    content: string;
    editable: boolean;
    source: string;
  }> {
    return this.request(`skills/${encodeURIComponent(name)}/source`);
  }

  saveSkillSource(name: string, content: string): Promise<any> {
    return this.send('PUT', `skills/${encodeURIComponent(name)}/source`, {
      content
    });
  }

  /** A file of the Jupyter root (its contents-API path) as text, read as nini reads data: its first
   * 2 MB decoded with the encoding load_dataset would detect, which it says (and a table's separator). */
  readText(path: string): Promise<TextFile> {
    return this.request(`files/text?path=${encodeURIComponent(path)}`);
  }

  /** `ui.language` (`auto`, `zh` or `en`), read once when the sidebar starts. */
  uiSettings(): Promise<{ language: string }> {
    return this.request('ui');
  }

  generateReport(
    sessionId: string,
    lang: Language
  ): Promise<{ title: string; paths: Record<string, string> }> {
    return this.send(
      'POST',
      `sessions/${encodeURIComponent(sessionId)}/report`,
      { lang }
    );
  }

  listReports(sessionId: string): Promise<ReportInfo[]> {
    return this.request(`sessions/${encodeURIComponent(sessionId)}/reports`);
  }

  models(): Promise<ModelsInfo> {
    return this.request('models');
  }

  saveProvider(provider: ProviderInfo): Promise<unknown> {
    return this.send(
      'PUT',
      `models/providers/${encodeURIComponent(provider.name)}`,
      provider
    );
  }

  /** Whether the key variable `name` is set on the server (never its value). A POST: a key pasted in
   * place of the name stays out of URLs and logs. */
  keyVariable(name: string): Promise<{ name: string; set: boolean }> {
    return this.send('POST', 'models/key-variable', { name });
  }

  testProvider(provider: ProviderInfo): Promise<{
    ok: boolean;
    reason?: string;
    model?: string;
    latency_ms?: number;
  }> {
    return this.send('POST', 'models/test', provider);
  }

  /** One tiny call per model the purposes would call first, as `nini models test`. */
  testAllModels(): Promise<{
    results: Array<{ target: string; ok: boolean; detail: string }>;
  }> {
    return this.send('POST', 'models/test', { all: true });
  }

  experiencePending(): Promise<PendingView> {
    return this.request('experience/pending');
  }

  /** An explicit statement as a candidate (201 with `kept`, or 200 with why it was `dropped`). */
  addExperience(fields: {
    text: string;
    level?: Level;
    type?: string;
    trigger?: string;
    stage?: string;
    session_id?: string;
  }): Promise<CaptureResult> {
    return this.send('POST', 'experience/pending', fields);
  }

  editCandidate(
    id: string,
    changes: Partial<ExperienceCandidate>
  ): Promise<ExperienceCandidate> {
    return this.send(
      'PUT',
      `experience/pending/${encodeURIComponent(id)}`,
      changes
    );
  }

  discardCandidate(id: string): Promise<{ discarded: string }> {
    return this.send('DELETE', `experience/pending/${encodeURIComponent(id)}`);
  }

  /** What the curator would do with the chosen candidates; changes nothing. */
  experiencePlan(
    ids: string[],
    targets: Record<string, Level>
  ): Promise<ExperiencePlan> {
    return this.send('POST', 'experience/plan', { ids, targets });
  }

  /** Carry out the plan the user saw (`plan`: its lines); CONFLICT, with the new lines in its
   * details, when the library changed since. */
  depositExperience(
    ids: string[],
    targets: Record<string, Level>,
    plan: string[]
  ): Promise<{ line: string; plan: string[] }> {
    return this.send('POST', 'experience/deposit', {
      ids,
      targets,
      confirm: true,
      plan
    });
  }

  /** Both libraries' entries, deprecated ones too, with the problems of their INDEX.md files. */
  experienceEntries(): Promise<ExperienceEntries> {
    return this.request('experience/entries?all=1');
  }

  /** One document by its reference (`team/knowledge/EXP-0001.md`): its Markdown. */
  experienceDocument(
    reference: string
  ): Promise<{ reference: string; text: string }> {
    return this.request(
      `experience/entries/${reference.split('/').map(encodeURIComponent).join('/')}`
    );
  }

  deprecateExperience(level: Level, id: string): Promise<{ line: string }> {
    return this.send(
      'POST',
      `experience/entries/${level}/${encodeURIComponent(id)}/deprecate`,
      { confirm: true }
    );
  }

  /** What each run of the session was warned about and what was captured from it, oldest first. */
  sessionExperience(sessionId: string): Promise<ExperienceRecord[]> {
    return this.request(`sessions/${encodeURIComponent(sessionId)}/experience`);
  }

  preferences(): Promise<PreferenceList> {
    return this.request('preferences');
  }

  /** Your own rule (confidence 1.0); `project: '.'` for this project only. */
  addPreference(
    key: string,
    value: unknown,
    project: '.' | null
  ): Promise<Preference> {
    return this.send('POST', 'preferences', {
      key,
      value,
      ...(project ? { project } : {})
    });
  }

  editPreference(id: number, value: unknown): Promise<Preference> {
    return this.send('PUT', `preferences/${id}`, { value });
  }

  deletePreference(id: number): Promise<Preference> {
    return this.send('DELETE', `preferences/${id}`);
  }

  /** Exactly the block the next run of this skill type is given. */
  previewPreferences(skillType: string): Promise<PreferencePreview> {
    return this.request(
      `preferences/preview?skill_type=${encodeURIComponent(skillType)}`
    );
  }

  switches(): Promise<Switches> {
    return this.request('preferences/switches');
  }

  setSwitches(change: Partial<Switches>): Promise<Switches> {
    return this.send('PUT', 'preferences/switches', change);
  }

  /** The user's judgement of an output (a turn id, a report's tool call id, a proposal id). */
  feedback(body: {
    run_id: string;
    action: FeedbackAction;
    signals?: string[];
    comment?: string;
  }): Promise<Learned> {
    return this.send('POST', 'feedback', body);
  }

  /** The latest feedback on each of a session's outputs, by run id (its thumbs show it pressed). */
  sessionFeedback(sessionId: string): Promise<Record<string, FeedbackAction>> {
    return this.request(`sessions/${encodeURIComponent(sessionId)}/feedback`);
  }

  /** The address of a workspace file of a session (charts, reports), for `<img>` and iframes. */
  artifactUrl(sessionId: string, path: string): string {
    const encoded = path.split('/').map(encodeURIComponent).join('/');
    return URLExt.join(
      this.settings.baseUrl,
      'nini/api/sessions',
      encodeURIComponent(sessionId),
      'artifacts',
      encoded
    );
  }

  /** A download of the session (`GET .../export`); `sandboxed`: a notebook whose steps re-run in nini's sandbox. */
  exportUrl(
    sessionId: string,
    format: 'ipynb' | 'md',
    sandboxed: boolean
  ): string {
    const url = URLExt.join(
      this.settings.baseUrl,
      'nini/api/sessions',
      encodeURIComponent(sessionId),
      'export'
    );
    return `${url}?format=${format}${sandboxed ? '&sandboxed=1' : ''}&nini_language=${language()}`;
  }

  /** The event socket of a session, from just after `since` (0: all of it). */
  eventsUrl(sessionId: string, since: number): string {
    const url = URLExt.join(
      this.settings.wsUrl,
      'nini/api/sessions',
      encodeURIComponent(sessionId),
      'events'
    );
    const token = this.settings.token
      ? `&token=${encodeURIComponent(this.settings.token)}`
      : '';
    return `${url}?since=${since}&batch=1${token}`; // batch: a replay arrives in few messages
  }
}
