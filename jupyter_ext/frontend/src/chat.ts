/**
 * The Chat tab: pick or start a session, ask, watch every step as it runs, stop.
 *
 * Events come from the session's socket (`EventStream`, which resumes with `?since=` after a drop)
 * and are folded by `ChatModel`; they are queued and drawn once per animation frame, so a burst
 * (a reopened session, a chatty agent) costs one layout, not thousands.
 */
import type { ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import {
  ApprovalDecision,
  NiniApi,
  NiniEvent,
  RunWhere,
  SessionInfo
} from './api';
import { Attachments } from './attachments';
import { SessionList } from './sessions';
import type { NotebookJson } from './context';
import { errorParts, showError } from './errors';
import { feedbackControl, FeedbackMemory } from './feedback';
import { ChatModel, Proposal, PROPOSE_CELL } from './model';
import { NoModelCard } from './nomodel';
import { Decision, PendingCells } from './proposals';
import { el, RenderContext, renderItem, renderMarkdown } from './render';
import { EventStream, StreamState } from './stream';
import { attendTo, enableAnswers } from './approval';
import { StatusLine } from './statusline';
import { WhereChoice } from './where';
import { __ } from './i18n';

export interface ChatOptions {
  api: NiniApi;
  rendermime: IRenderMimeRegistry;
  notebooks: INotebookTracker | null;
  /** Brings the Models tab to the front (the no-model card's button). */
  openModels?: () => void;
}

export class ChatView extends Widget {
  /** Emitted when the open session changes (the Reports tab follows it). */
  readonly sessionChanged = new Signal<this, string | null>(this);
  /** Emitted with each batch of the open session's events, once drawn (the Experience tab follows them). */
  readonly eventsArrived = new Signal<this, NiniEvent[]>(this);
  /** Emitted when a notification's "Show" asks for the chat to be brought to the front. */
  readonly revealRequested = new Signal<this, void>(this);
  sessionId: string | null = null;
  private model = new ChatModel();
  private stream: EventStream | null = null;
  private nodes = new Map<string, HTMLElement>();
  private queue: NiniEvent[] = [];
  private frame = 0;
  private asking = false;
  private readonly context: RenderContext;
  private readonly sessions = new SessionList(
    this.options.api,
    id => this.open(id),
    error => this.say(error)
  );
  private readonly log = el('div', 'nini-log');
  private readonly input = el('textarea', 'nini-input');
  private readonly send = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-send',
    __('Ask')
  );
  private readonly stop = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-warn nini-stop',
    __('Stop')
  );
  private readonly runWhere = new WhereChoice(() => this.showWhere());
  private readonly where = el('span', 'nini-where');
  private readonly allowed = el(
    'button',
    'jp-Button jp-mod-styled nini-allowed-badge'
  );
  private approvalRequired = true; // the server's execution.approve_in_user_kernel, asked at start
  private readonly status = el('div', 'nini-status');
  /** What the chat waits for and since when, with Stop beside it (./statusline). */
  private readonly statusLine = new StatusLine(this.stop);
  /** The question just sent, shown at once until its `user_message` event takes its place. */
  private echo: HTMLElement | null = null;
  private followed: NotebookPanel | null = null;
  /** The chips of what goes with the next question (notebook, variables, cells, files), `@` and the attach menu. */
  readonly attachments = new Attachments(
    () => ({
      panel: this.options.notebooks?.currentWidget ?? null,
      kernel: this.notebookKernel()
    }),
    this.options.api
  );
  private readonly pending: PendingCells;
  /** Shown when no model could answer (checked when the chat opens), with a way to the Models tab. */
  readonly noModel: NoModelCard;
  private readonly feedbackMemory: FeedbackMemory;

  constructor(private readonly options: ChatOptions) {
    super();
    this.addClass('nini-chat');
    this.title.label = __('Chat');
    this.context = {
      rendermime: options.rendermime,
      artifactUrl: path => options.api.artifactUrl(this.sessionId ?? '', path),
      onApproval: (id, decision) => void this.decide(id, decision),
      onProposal: (proposal, decision, run) =>
        void this.decideProposal(proposal, decision, run),
      feedback: turnId => feedbackControl(this.options.api, turnId, 'answer'),
      notebooks: options.notebooks,
      wholeCode: async callId => {
        const call = await options.api.toolCall(this.sessionId ?? '', callId);
        return typeof call.arguments?.code === 'string'
          ? call.arguments.code
          : null;
      }
    };
    this.pending = new PendingCells(
      options.notebooks,
      this.context.onProposal!
    );
    this.noModel = new NoModelCard(
      options.api,
      options.openModels ?? (() => undefined)
    );
    this.feedbackMemory = FeedbackMemory.of(options.api); // shared with the Reports tab's controls
    this.build();
    // the label follows the active notebook and its kernel (started, restarted or changed later)
    options.notebooks?.currentChanged.connect((_, panel) =>
      this.followNotebook(panel)
    );
    this.followNotebook(options.notebooks?.currentWidget ?? null);
    void this.refreshSessions();
    void this.noModel.check(); // said when the chat opens, not only once a question is refused
    // JupyterLab loads its Markdown parser and a language's highlighting on first use: done now, while
    // nothing is asked, so the first answer and the first step's code show without that wait
    setTimeout(
      () =>
        void renderMarkdown(
          options.rendermime,
          el('div'),
          '**nini**\n\n```python\nx = 1\n```'
        ),
      0
    );
    void options.api.approvalPolicy().then(
      policy => {
        this.approvalRequired = policy.required;
        this.showWhere();
      },
      () => undefined // an older server: it asks by default
    );
  }

  get running(): boolean {
    return this.asking || this.model.running || this.statusLine.waiting;
  }

  private build(): void {
    const header = el('div', 'nini-chat-header');
    const fresh = el(
      'button',
      'jp-Button jp-mod-styled nini-new-chat',
      __('New chat')
    );
    fresh.setAttribute('aria-label', __('Start a new chat'));
    fresh.onclick = () => this.newChat();
    this.allowed.hidden = true;
    this.allowed.textContent = __('Allowed for this session ✕');
    this.allowed.title = __(
      "This session's steps run in your kernel without asking. Click to be asked again."
    );
    this.allowed.onclick = () => void this.revokeAllowance();
    header.append(
      this.sessions.node,
      fresh,
      this.runWhere.node,
      this.where,
      this.allowed
    );
    this.log.setAttribute('role', 'log');
    this.log.setAttribute('aria-live', 'polite');
    this.log.setAttribute('aria-label', __('Conversation'));
    const footer = el('div', 'nini-chat-footer');
    this.input.placeholder = __(
      'Ask nini about your data (Enter sends, Shift+Enter adds a line)'
    );
    this.input.setAttribute('aria-label', __('Question'));
    this.input.rows = 3;
    this.attachments.watch(this.input);
    this.input.onkeydown = event => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        void this.ask();
      }
    };
    this.send.setAttribute('aria-label', __('Ask nini'));
    this.send.onclick = () => void this.ask();
    this.stop.setAttribute('aria-label', __('Stop the run'));
    this.stop.onclick = () => void this.cancel();
    const buttons = el('div', 'nini-buttons');
    buttons.append(this.send);
    footer.append(
      this.statusLine.node,
      this.attachments.node,
      this.input,
      buttons,
      this.status
    );
    this.node.append(header, this.noModel.node, this.log, footer);
    this.showWhere();
    this.updateButtons();
  }

  /** The active notebook's kernel and where the turn's code is to run with it (null: no notebook
   * with a kernel, so the sandbox without variables). */
  private notebookKernel(): {
    kernelId: string;
    name: string;
    mode: RunWhere;
  } | null {
    const panel = this.options.notebooks?.currentWidget;
    const kernel = panel?.sessionContext.session?.kernel;
    if (!panel || !kernel) {
      return null;
    }
    return {
      kernelId: kernel.id,
      name: panel.title.label,
      mode: this.runWhere.value === 'kernel' ? 'kernel' : 'sandbox'
    };
  }

  private followNotebook(panel: NotebookPanel | null): void {
    this.followed?.sessionContext.kernelChanged.disconnect(
      this.showWhere,
      this
    );
    this.followed = panel;
    panel?.sessionContext.kernelChanged.connect(this.showWhere, this);
    this.showWhere();
  }

  private showWhere(): void {
    const kernel = this.notebookKernel();
    let text = __(
      "in nini's sandbox, without a notebook's variables (no notebook with a kernel is open)"
    );
    if (kernel?.mode === 'sandbox') {
      text = __(
        "in nini's sandbox, with copies of %1's variables the agent asks for",
        kernel.name
      );
    } else if (kernel?.mode === 'kernel') {
      text = this.approvalRequired
        ? __(
            "in %1's kernel, not sandboxed: each step shows its code and waits for your OK",
            kernel.name
          )
        : __(
            "in %1's kernel, not sandboxed, WITHOUT asking: approval is off on this server (execution.approve_in_user_kernel)",
            kernel.name
          );
    }
    this.where.textContent = text;
    this.where.dataset.target =
      kernel?.mode === 'kernel' ? 'notebook' : 'sandbox';
    this.where.dataset.unasked = String(
      kernel?.mode === 'kernel' && !this.approvalRequired
    );
    this.attachments.refresh();
  }

  /** The "allowed for this session" badge, as the server has it now (an allowance lasts until it is
   * withdrawn or the server stops, so replayed events cannot tell). */
  private async showAllowance(): Promise<void> {
    const id = this.sessionId;
    let allowed = false;
    if (id !== null) {
      try {
        allowed = (await this.options.api.approvals(id)).allowed_for_session;
      } catch {
        allowed = false;
      }
    }
    if (id === this.sessionId) {
      this.allowed.hidden = !allowed;
    }
  }

  refreshSessions(): Promise<SessionInfo[]> {
    return this.sessions.refresh();
  }

  newChat(): void {
    this.open(null);
    this.input.focus();
  }

  /** Show session `id` (its whole history, then live), or an empty chat for null. */
  open(id: string | null): void {
    this.stream?.dispose();
    this.stream = null;
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.queue = [];
    this.model = new ChatModel();
    this.pending.clear();
    this.nodes.clear();
    this.log.replaceChildren();
    this.log.dataset.lastSeq = '0';
    this.sessionId = id;
    this.sessions.select(id);
    this.status.textContent = '';
    this.statusLine.reset();
    this.echo = null;
    if (id !== null) {
      this.stream = new EventStream({
        url: since => this.options.api.eventsUrl(id, since),
        onEvents: events => this.enqueue(events),
        onState: (state, retry) => this.showState(state, retry)
      });
    }
    this.updateButtons();
    void this.showAllowance();
    void this.feedbackMemory.load(id); // its thumbs pressed as they were left
    this.sessionChanged.emit(id);
  }

  private enqueue(events: NiniEvent[]): void {
    this.queue.push(...events);
    if (this.frame === 0) {
      this.frame = requestAnimationFrame(() => this.flush());
    }
  }

  private flush(): void {
    this.frame = 0;
    const events = this.queue;
    this.queue = [];
    const nearBottom =
      this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 80;
    this.draw(this.model.apply(events));
    this.statusLine.events(events);
    if (
      this.echo !== null &&
      events.some(event => event.type === 'user_message')
    ) {
      this.echo.remove(); // the question as the server recorded it is in the log now
      this.echo = null;
    }
    if (
      events.some(
        event =>
          event.type === 'tool_result' && event.data?.name === PROPOSE_CELL
      )
    ) {
      void this.syncProposals();
    }
    if (events.some(event => event.type === 'done')) {
      this.asking = false;
    }
    this.log.dataset.lastSeq = String(this.model.lastSeq);
    if (events.some(event => event.type === 'approval_scope')) {
      void this.showAllowance();
    }
    this.updateButtons();
    if (nearBottom || events.some(event => event.type === 'user_message')) {
      this.log.scrollTop = this.log.scrollHeight;
    }
    this.eventsArrived.emit(events);
  }

  /** Render the items `ids` (new ones placed, others updated in place); proposals go to the notebook too. */
  private draw(ids: Iterable<string>): void {
    for (const id of ids) {
      const item = this.model.get(id)!;
      const existing = this.nodes.get(id);
      const node = renderItem(item, existing, this.context);
      if (existing === undefined) {
        this.nodes.set(id, node);
        this.place(id, node);
      }
      if (item.kind === 'approval') {
        attendTo(item, node, this.node, this.isVisible, () =>
          this.revealRequested.emit(undefined)
        );
      }
      if (item.kind === 'proposal') {
        this.pending.sync(item.proposal);
      }
    }
  }

  /** The proposals as the server recorded them (a decision made in another window, a result the
   * event did not carry). */
  private async syncProposals(): Promise<void> {
    const id = this.sessionId;
    if (id === null) {
      return;
    }
    let proposals: Proposal[];
    try {
      proposals = await this.options.api.listProposals(id);
    } catch {
      return; // the events keep the proposals shown; this is only a catch-up
    }
    if (id === this.sessionId) {
      this.draw(
        proposals
          .map(proposal => this.model.setProposal(proposal))
          .filter((x): x is string => x !== null)
      );
    }
  }

  /** Accept (insert, and run when asked) or reject a proposal: recorded first, so a proposal
   * decided elsewhere (CONFLICT) leaves the notebook as it is. */
  private async decideProposal(
    proposal: Proposal,
    decision: Decision,
    run: boolean
  ): Promise<void> {
    const id = this.sessionId;
    if (id === null) {
      return;
    }
    try {
      if (
        decision === 'accept' &&
        this.pending.panelOf(proposal.proposal_id) === null
      ) {
        throw new Error('open a notebook to accept this proposal into');
      }
      const recorded = await this.options.api.decideProposal(
        id,
        proposal.proposal_id,
        decision,
        run
      );
      if (decision === 'accept') {
        await this.pending.accept(proposal, run);
      }
      this.pending.remove(proposal.proposal_id);
      const changed = this.model.setProposal({ ...proposal, ...recorded });
      this.draw(changed === null ? [] : [changed]);
    } catch (error) {
      this.say(error);
      void this.syncProposals();
      const item = this.model.get(`proposal:${proposal.proposal_id}`);
      if (item?.kind === 'proposal') {
        this.nodes.get(item.id)?.removeAttribute('data-status'); // redraw: its buttons come back
        this.draw([item.id]);
        this.pending.remove(proposal.proposal_id);
        this.pending.sync(item.proposal);
      }
    }
  }

  /** Attach cells of a notebook to the next question (the cell context menu's command). */
  attachCells(panel: NotebookPanel, cells: ICellModel[]): void {
    this.attachments.addCells(panel, cells);
  }

  /** Attach a file's text to the next question (the file browser's command). */
  attachFile(path: string, text: string): void {
    this.attachments.addFile(path, text);
  }

  /** Say why something could not be attached (too large, not text). */
  attachError(message: string): void {
    this.say(message);
  }

  /** The `notebook` of the ask, as its chips say (./attachments). */
  private notebookJson(): NotebookJson | null {
    return this.attachments.notebookJson();
  }

  /** Where a new item's element goes: the summary of the older turns first; a proposal right after
   * the step that made it; an approval inside the card of the step that asks; a step inside its
   * task, or in its turn's background group; anything else last. */
  private place(id: string, node: HTMLElement): void {
    const item = this.model.get(id)!;
    if (item.kind === 'earlier') {
      this.log.prepend(node); // the summary of what came before: atop the conversation, once
      return;
    }
    const maker =
      item.kind === 'proposal'
        ? this.nodes.get(item.proposal.proposal_id)
        : undefined;
    if (maker?.isConnected) {
      maker.after(node);
      return;
    }
    const asking =
      item.kind === 'approval' && item.stepId !== null
        ? this.nodes.get(item.stepId)
        : undefined;
    if (asking?.isConnected) {
      asking.append(node); // the approval is part of the step that asks
      return;
    }
    if (item.kind === 'step' && item.parentId !== null) {
      const parent = this.nodes.get(item.parentId);
      parent?.querySelector(':scope > .nini-step-children')?.append(node);
      if (parent) {
        return;
      }
    }
    if (item.kind === 'step' && item.background) {
      this.backgroundGroup(item.turnId).append(node);
      return;
    }
    this.log.append(node);
  }

  private backgroundGroup(turnId: string | null): HTMLElement {
    const key = `background:${turnId}`;
    let group = this.nodes.get(key);
    if (group === undefined) {
      group = el('details', 'nini-background');
      group.append(el('summary', undefined, __('After the answer')));
      this.nodes.set(key, group);
      this.log.append(group);
    }
    return group;
  }

  async ask(): Promise<void> {
    const message = this.input.value.trim();
    if (!message || this.running) {
      return;
    }
    const api = this.options.api;
    const kernel = this.attachments.kernelFor(this.notebookKernel());
    const notebook = this.notebookJson();
    this.asking = true;
    this.input.value = ''; // the question moves to the log at once, before the server answers
    const echo = (this.echo = el('div', 'nini-user nini-mod-pending', message));
    this.log.append(echo);
    this.log.scrollTop = this.log.scrollHeight;
    this.statusLine.apply({ kind: 'ask' });
    this.updateButtons();
    try {
      if (this.sessionId === null) {
        // the server makes the session only once it takes the question: a refused one leaves none behind
        const started = await api.askNew(message, kernel, notebook);
        this.open(started.session_id);
        this.echo = echo;
        this.log.append(echo); // open() emptied the log; the session's events replace the echo
        this.statusLine.apply({ kind: 'ask' });
        void this.refreshSessions();
      } else {
        await api.ask(this.sessionId, message, kernel, notebook);
      }
      this.attachments.clear();
    } catch (error) {
      this.asking = false;
      echo.remove();
      this.echo = this.echo === echo ? null : this.echo;
      this.input.value ||= message; // given back to edit, unless a new one is being typed
      this.statusLine.apply({ kind: 'ask_failed' });
      this.say(error);
    }
    this.updateButtons();
  }

  async cancel(): Promise<void> {
    if (this.sessionId === null) {
      return;
    }
    this.statusLine.apply({ kind: 'stop' }); // "Stopping…" until the run's `done` is in
    try {
      const { canceled } = await this.options.api.cancel(this.sessionId);
      if (!canceled) {
        this.statusLine.apply({ kind: 'stop_missed' }); // it had ended already
      }
    } catch (error) {
      this.say(error);
    }
    this.updateButtons();
  }

  private async decide(
    approvalId: string,
    decision: ApprovalDecision
  ): Promise<void> {
    try {
      await this.options.api.decideApproval(
        this.sessionId!,
        approvalId,
        decision
      );
    } catch (error) {
      this.say(error);
      enableAnswers(this.nodes.get(`approval:${approvalId}`)); // the answer did not arrive: ask again
    }
  }

  private async revokeAllowance(): Promise<void> {
    try {
      await this.options.api.revokeSessionApproval(this.sessionId!);
    } catch (error) {
      this.say(error);
    }
  }

  private showState(state: StreamState, retryInMs?: number): void {
    this.log.dataset.stream = state;
    if (state === 'waiting') {
      this.status.textContent = this.status.dataset.lost = __(
        'Connection lost; reconnecting in %1 s…',
        Math.round((retryInMs ?? 0) / 100) / 10
      );
    } else if (
      state === 'open' &&
      this.status.textContent === this.status.dataset.lost
    ) {
      // still that line, not a later one
      this.status.textContent = '';
    }
  }

  /** A failed request: its plain sentence (errors.ts), then the envelope's code and words (never a stack trace). */
  private say(error: unknown): void {
    const node = el('div', 'nini-error nini-request-error');
    showError(node, error);
    node.setAttribute('role', 'alert');
    this.log.append(node);
    if (errorParts(error).code === 'NO_MODEL_AVAILABLE') {
      void this.noModel.check(); // the card says what to do, and leads to the Models tab
    }
  }

  private updateButtons(): void {
    const running = this.running;
    this.send.disabled = running;
    this.stop.disabled = !running || this.sessionId === null;
    this.node.dataset.running = String(running);
  }

  protected onActivateRequest(): void {
    // the composer, unless the person is already in the chat (a click on thumbs down focused its form first)
    if (!this.node.contains(document.activeElement)) {
      this.input.focus();
    }
  }

  dispose(): void {
    this.stream?.dispose();
    cancelAnimationFrame(this.frame);
    super.dispose();
  }
}
