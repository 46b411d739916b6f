/**
 * The Experience tab: the candidates waiting for the user (add one, choose, review the curator's
 * plan, confirm it: nothing is written to a library without that click), the libraries (read a
 * document, deprecate an entry after a dialog), and what the chat's current run was warned about
 * and what was captured from it, following the chat's own socket.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { NiniApi, NiniApiError, NiniEvent } from './api';
import {
  describeRecord,
  ExperienceEntry,
  experienceChanges,
  LEVELS,
  Level,
  newestFirst,
  PendingItem,
  planRequest,
  problemLines,
  SCORES,
  scoreText,
  term,
  visibleEntries
} from './memory';
import { tell } from './dom';
import { __ } from './i18n';
import { el, renderMarkdown } from './render';

export interface ExperienceOptions {
  api: NiniApi;
  rendermime: IRenderMimeRegistry;
}

/** The plan on screen: what Confirm carries out, exactly as the user saw it. */
interface ShownPlan {
  ids: string[];
  targets: Record<string, Level>;
  lines: string[];
}

export class ExperienceView extends Widget {
  sessionId: string | null = null;
  private items: PendingItem[] = [];
  private entries: ExperienceEntry[] = [];
  private readonly chosen = new Set<string>();
  private readonly targets = new Map<string, Level>();
  private shown: ShownPlan | null = null;
  private opened: ExperienceEntry | null = null;
  private readonly latest = { pending: 0, library: 0, run: 0 }; // an older reply never overwrites a newer one
  private readonly message = el('div', 'nini-exp-message');
  private readonly pendingProblems = el('div', 'nini-exp-problems');
  private readonly candidates = el('ul', 'nini-exp-candidates');
  private readonly form = el('form', 'nini-exp-add');
  private readonly review = el(
    'button',
    'jp-Button jp-mod-styled nini-exp-review',
    __('Review plan')
  );
  private readonly plan = el('div', 'nini-exp-plan');
  private readonly planLines = el('ol', 'nini-exp-plan-lines');
  private readonly confirm = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-exp-confirm',
    __('Confirm')
  );
  private readonly showDeprecated = el('input', 'nini-exp-show-deprecated');
  private readonly problems = el('div', 'nini-exp-problems');
  private readonly list = el('ul', 'nini-exp-entries');
  private readonly reading = el('div', 'nini-exp-document');
  private readonly documentTitle = el('span', 'nini-exp-document-title');
  private readonly documentBody = el('div', 'nini-exp-document-body');
  private readonly deprecate = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-warn nini-exp-deprecate',
    __('Deprecate')
  );
  private readonly runMessage = el('div', 'nini-exp-run-message');
  private readonly records = el('ul', 'nini-exp-records');

  constructor(private readonly options: ExperienceOptions) {
    super();
    this.addClass('nini-experience');
    this.title.label = __('Experience');
    this.node.append(this.buildPending(), this.buildLibrary(), this.buildRun());
    this.showSession(null);
  }

  private buildPending(): HTMLElement {
    const section = el('section', 'nini-exp-section nini-exp-pending');
    section.setAttribute('aria-label', __('Candidates to confirm'));
    this.candidates.setAttribute('aria-label', __('Pending candidates'));
    this.review.type = 'button';
    this.review.setAttribute(
      'aria-label',
      __("Review the curator's plan for the chosen candidates")
    );
    this.review.onclick = () => void this.reviewPlan();
    const reload = el(
      'button',
      'jp-Button jp-mod-styled nini-exp-refresh',
      __('Refresh')
    );
    reload.type = 'button';
    reload.setAttribute(
      'aria-label',
      __('Reload the candidates and the libraries')
    );
    reload.onclick = () => void this.refresh();
    const toolbar = el('div', 'nini-toolbar');
    toolbar.append(this.review, reload);
    this.buildForm();
    this.buildPlan();
    section.append(
      el('h3', undefined, __('To confirm')),
      this.pendingProblems,
      this.candidates,
      toolbar,
      this.plan,
      this.message,
      this.form
    );
    return section;
  }

  private buildForm(): void {
    const text = Object.assign(el('textarea'), {
      name: 'text',
      required: true,
      rows: 2,
      placeholder: __(
        'What to remember: the choice, what it rejects and why (e.g. use the median, the revenue column has outliers)'
      )
    });
    text.setAttribute('aria-label', __('Experience to remember'));
    const level = levelSelect(__('Library of the new candidate'), true);
    level.name = 'level';
    const add = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-accept nini-exp-add-button',
      __('Add')
    );
    add.type = 'submit';
    add.setAttribute('aria-label', __('Add it as a pending candidate'));
    const row = el('div', 'nini-toolbar');
    row.append(level, add);
    this.form.setAttribute('aria-label', __('Add an experience'));
    this.form.append(
      el('label', 'nini-exp-label', __('Add an experience')),
      text,
      row
    );
    this.form.onsubmit = event => {
      event.preventDefault();
      void this.add(text.value.trim(), level.value as Level | '');
    };
  }

  private buildPlan(): void {
    this.plan.hidden = true;
    this.plan.setAttribute('role', 'region');
    this.plan.setAttribute('aria-label', __('Plan to confirm'));
    this.confirm.type = 'button';
    this.confirm.setAttribute(
      'aria-label',
      __('Confirm: write this plan to the libraries')
    );
    this.confirm.onclick = () => void this.deposit();
    const cancel = el(
      'button',
      'jp-Button jp-mod-styled nini-exp-cancel',
      __('Cancel')
    );
    cancel.type = 'button';
    cancel.setAttribute(
      'aria-label',
      __('Cancel: write nothing, keep the candidates pending')
    );
    cancel.onclick = () => {
      this.hidePlan();
      this.tell(__('Nothing was written; the candidates stay pending.'));
    };
    const buttons = el('div', 'nini-buttons');
    buttons.append(this.confirm, cancel);
    this.plan.append(
      el(
        'div',
        'nini-exp-label',
        __('The plan (nothing is written until you confirm):')
      ),
      this.planLines,
      buttons
    );
  }

  private buildLibrary(): HTMLElement {
    const section = el('section', 'nini-exp-section nini-exp-library');
    section.setAttribute('aria-label', __('Library'));
    const toggle = el('label', 'nini-toggle');
    this.showDeprecated.type = 'checkbox';
    this.showDeprecated.onchange = () => this.drawEntries();
    toggle.append(
      this.showDeprecated,
      document.createTextNode(` ${__('Show deprecated')}`)
    );
    this.list.setAttribute('aria-label', __('Experience entries'));
    this.reading.hidden = true;
    this.reading.setAttribute('role', 'region');
    this.reading.setAttribute('aria-label', __('Experience document'));
    this.deprecate.type = 'button';
    this.deprecate.onclick = () => void this.askDeprecate();
    const close = el(
      'button',
      'jp-Button jp-mod-minimal nini-exp-close',
      __('Close')
    );
    close.type = 'button';
    close.setAttribute('aria-label', __('Close the document'));
    close.onclick = () => this.closeDocument();
    const head = el('div', 'nini-exp-document-head');
    head.append(this.documentTitle, this.deprecate, close);
    this.reading.append(head, this.documentBody);
    section.append(
      el('h3', undefined, __('Library')),
      toggle,
      this.problems,
      this.list,
      this.reading
    );
    return section;
  }

  private buildRun(): HTMLElement {
    const section = el('section', 'nini-exp-section nini-exp-run');
    section.setAttribute('aria-label', __('What this run was given'));
    this.runMessage.setAttribute('role', 'status');
    this.records.setAttribute(
      'aria-label',
      __("The chat session's experience records")
    );
    section.append(
      el('h3', undefined, __('What this run was given')),
      this.runMessage,
      this.records
    );
    return section;
  }

  /** Follow the chat's session: its records are those of the last section. */
  showSession(id: string | null): void {
    this.sessionId = id;
    this.records.replaceChildren();
    this.runMessage.textContent =
      id === null
        ? __(
            'Open or start a chat session to see the experience its runs were given.'
          )
        : '';
    if (id !== null && this.isVisible) {
      void this.refreshRun();
    }
  }

  /** Events of the chat's socket: refresh what they change (when shown; showing refreshes all). */
  follow(events: NiniEvent[]): void {
    const changes = experienceChanges(events);
    if (!this.isVisible) {
      return;
    }
    if (changes.run) {
      void this.refreshRun();
    }
    if (changes.pending) {
      void this.refreshPending();
    }
  }

  async refresh(): Promise<void> {
    await Promise.all([
      this.refreshPending(),
      this.refreshLibrary(),
      this.refreshRun()
    ]);
  }

  // -- pending candidates ------------------------------------------------------------------------------

  async refreshPending(): Promise<void> {
    const asked = ++this.latest.pending;
    try {
      const view = await this.options.api.experiencePending();
      if (asked !== this.latest.pending) {
        return;
      }
      this.items = view.candidates;
      const ids = new Set(this.items.map(item => item.candidate.id));
      for (const id of [...this.chosen]) {
        if (!ids.has(id)) {
          this.chosen.delete(id);
          this.targets.delete(id);
        }
      }
      if (this.shown !== null && this.shown.ids.some(id => !ids.has(id))) {
        this.hidePlan(); // a candidate of the plan is gone: the plan is no longer the one to confirm
      }
      this.drawCandidates(view.problems ?? []);
    } catch (error) {
      this.tell(error);
    }
  }

  private drawCandidates(problems: string[]): void {
    this.pendingProblems.replaceChildren(
      ...problems.map(line => problem(line))
    );
    this.candidates.replaceChildren(
      ...this.items.map(item => this.candidate(item))
    );
    if (!this.items.length) {
      this.candidates.append(
        el('li', 'nini-empty', __('No candidate waits for you.'))
      );
    }
    this.candidates.dataset.count = String(this.items.length);
    this.review.disabled = !this.items.length;
  }

  private candidate(item: PendingItem): HTMLElement {
    const candidate = item.candidate;
    const title = candidate.title || candidate.decision;
    const node = el('li', 'nini-exp-candidate');
    node.dataset.id = candidate.id;
    const choose = el('input', 'nini-exp-choose');
    choose.type = 'checkbox';
    choose.checked = this.chosen.has(candidate.id);
    choose.setAttribute('aria-label', __('Choose %1', title));
    choose.onchange = () => {
      if (choose.checked) {
        this.chosen.add(candidate.id);
      } else {
        this.chosen.delete(candidate.id);
      }
      this.hidePlan();
    };
    const head = el('div', 'nini-exp-head');
    head.append(
      choose,
      el('span', 'nini-exp-title', title),
      el('span', 'nini-badge', term(candidate.type || 'experience'))
    );
    const fields = el('dl', 'nini-exp-fields');
    const field = (name: string, value: string) => {
      if (value) {
        fields.append(el('dt', undefined, name), el('dd', undefined, value));
      }
    };
    field(__('Decision'), candidate.decision);
    field(
      __('Rejected alternatives'),
      (candidate.alternatives ?? []).join('; ')
    );
    field(__('Signal'), candidate.signal);
    field(__('When'), candidate.trigger);
    const scores = el('div', 'nini-exp-scores');
    scores.setAttribute('role', 'group');
    scores.setAttribute('aria-label', __('Scores of %1', title));
    for (const [key, label] of SCORES) {
      scores.append(score(key, __(label), item.evaluation?.[key]));
    }
    scores.append(score('overall', __('Overall'), item.evaluation?.overall));
    const notes = [
      ...(candidate.notes ?? []),
      ...(item.evaluation?.notes ?? [])
    ];
    const noteList = el('ul', 'nini-exp-notes');
    noteList.append(...notes.map(note => el('li', undefined, note)));
    noteList.hidden = !notes.length;
    const target = levelSelect(__('Library for %1', title), false);
    target.classList.add('nini-exp-target');
    target.value =
      this.targets.get(candidate.id) ??
      (LEVELS.includes(candidate.level) ? candidate.level : 'team');
    target.onchange = () => {
      this.targets.set(candidate.id, target.value as Level);
      this.hidePlan();
    };
    const discard = el(
      'button',
      'jp-Button jp-mod-minimal nini-exp-discard',
      __('Discard')
    );
    discard.type = 'button';
    discard.setAttribute('aria-label', __('Discard %1', title));
    discard.onclick = () => void this.discard(candidate.id, title);
    const actions = el('div', 'nini-exp-actions');
    const to = el('label', 'nini-exp-label', `${__('To')} `);
    to.append(target);
    actions.append(to, discard);
    node.append(head, fields, scores, noteList, actions);
    return node;
  }

  private async add(text: string, level: Level | ''): Promise<void> {
    if (!text) {
      return;
    }
    try {
      const result = await this.options.api.addExperience(
        level ? { text, level } : { text }
      );
      if (result.kept.length) {
        this.form.reset();
        this.tell(
          __(
            'Added: %1. Review it, then choose it to deposit.',
            result.kept
              .map(candidate => candidate.title || candidate.decision)
              .join('; ')
          )
        );
      } else {
        const why = result.dropped
          .map(item => `${item.title}: ${item.why || item.reason}`)
          .join('; ');
        this.tell(
          new Error(
            __('Not kept as a candidate (%1).', why || __('already pending'))
          )
        );
      }
      await this.refreshPending();
    } catch (error) {
      this.tell(error);
    }
  }

  private async discard(id: string, title: string): Promise<void> {
    try {
      await this.options.api.discardCandidate(id);
      this.tell(__('Discarded: %1.', title));
    } catch (error) {
      this.tell(error);
    }
    await this.refreshPending();
  }

  /** The chosen candidates in the order shown, each with its library. */
  private choice(): { ids: string[]; targets: Record<string, Level> } {
    const chosen = this.items
      .filter(item => this.chosen.has(item.candidate.id))
      .map(item => ({
        candidate: item.candidate,
        target: this.targets.get(item.candidate.id) ?? item.candidate.level
      }));
    return planRequest(chosen);
  }

  private async reviewPlan(): Promise<void> {
    const { ids, targets } = this.choice();
    if (!ids.length) {
      this.tell(
        new Error(__('Choose at least one candidate to review its plan.'))
      );
      return;
    }
    this.review.disabled = true;
    try {
      const plan = await this.options.api.experiencePlan(ids, targets);
      this.showPlan({ ids, targets, lines: plan.plan });
      this.tell(
        __(
          'Check the plan, then Confirm to write it or Cancel to keep the candidates pending.'
        )
      );
    } catch (error) {
      this.tell(error);
    } finally {
      this.review.disabled = !this.items.length;
    }
  }

  private showPlan(shown: ShownPlan): void {
    this.shown = shown;
    this.planLines.replaceChildren(
      ...shown.lines.map(line => el('li', 'nini-exp-plan-line', line))
    );
    this.plan.hidden = false;
    this.confirm.disabled = false;
    this.confirm.focus();
  }

  private hidePlan(): void {
    this.shown = null;
    this.plan.hidden = true;
    this.planLines.replaceChildren();
  }

  /** Write the plan the user saw; when the library changed since, show the new plan to confirm. */
  private async deposit(): Promise<void> {
    const shown = this.shown;
    if (shown === null) {
      return;
    }
    this.confirm.disabled = true;
    try {
      const done = await this.options.api.depositExperience(
        shown.ids,
        shown.targets,
        shown.lines
      );
      this.hidePlan();
      this.tell(done.line);
      for (const id of shown.ids) {
        this.chosen.delete(id);
        this.targets.delete(id);
      }
      await Promise.all([this.refreshPending(), this.refreshLibrary()]);
    } catch (error) {
      const lines =
        error instanceof NiniApiError && error.code === 'CONFLICT'
          ? error.details?.plan
          : null;
      if (Array.isArray(lines)) {
        this.showPlan({ ...shown, lines: lines.map(String) });
        this.tell(
          new Error(
            __(
              'The library changed since the plan was shown. This is the new plan: confirm it again, or cancel.'
            )
          )
        );
      } else {
        this.confirm.disabled = false;
        this.tell(error);
      }
    }
  }

  // -- the libraries -------------------------------------------------------------------------------------

  async refreshLibrary(): Promise<void> {
    const asked = ++this.latest.library;
    try {
      const found = await this.options.api.experienceEntries();
      if (asked !== this.latest.library) {
        return;
      }
      this.entries = found.entries;
      this.problems.replaceChildren(
        ...problemLines(found.problems).map(line => problem(line))
      );
      this.drawEntries();
      if (this.opened !== null) {
        const opened = this.entries.find(
          entry => entry.reference === this.opened?.reference
        );
        if (opened === undefined) {
          this.closeDocument();
        } else {
          this.opened = opened;
          this.deprecate.hidden = opened.status !== 'active';
        }
      }
    } catch (error) {
      this.tell(error);
    }
  }

  private drawEntries(): void {
    const shown = visibleEntries(this.entries, this.showDeprecated.checked);
    this.list.replaceChildren(...shown.map(entry => this.entry(entry)));
    if (!shown.length) {
      this.list.append(
        el(
          'li',
          'nini-empty',
          this.entries.length
            ? __('Only deprecated entries.')
            : __('No experience deposited yet.')
        )
      );
    }
    this.list.dataset.count = String(shown.length);
  }

  private entry(entry: ExperienceEntry): HTMLElement {
    const node = el('li', 'nini-exp-entry');
    node.dataset.id = entry.id;
    node.dataset.level = entry.level;
    node.dataset.status = entry.status;
    const open = el('button', 'nini-exp-entry-open');
    open.type = 'button';
    open.setAttribute(
      'aria-label',
      __('Open %1 %2: %3', term(entry.level), entry.id, entry.title)
    );
    open.onclick = () => void this.openDocument(entry);
    open.append(
      el('span', 'nini-badge nini-exp-level', term(entry.level)),
      el('span', 'nini-exp-id', entry.id),
      el('span', 'nini-badge', term(entry.type)),
      el('span', 'nini-badge', term(entry.strength)),
      el('span', 'nini-exp-entry-title', entry.title)
    );
    if (entry.status !== 'active') {
      open.append(el('span', 'nini-badge nini-exp-status', term(entry.status)));
    }
    node.append(open);
    return node;
  }

  private async openDocument(entry: ExperienceEntry): Promise<void> {
    try {
      const found = await this.options.api.experienceDocument(entry.reference);
      this.opened = entry;
      this.documentTitle.textContent = found.reference;
      this.deprecate.hidden = entry.status !== 'active';
      this.deprecate.setAttribute('aria-label', __('Deprecate %1', entry.id));
      this.reading.dataset.reference = found.reference;
      this.reading.hidden = false;
      await renderMarkdown(
        this.options.rendermime,
        this.documentBody,
        found.text
      );
    } catch (error) {
      this.tell(error);
    }
  }

  private closeDocument(): void {
    this.opened = null;
    this.reading.hidden = true;
    delete this.reading.dataset.reference;
    this.documentBody.replaceChildren();
  }

  private async askDeprecate(): Promise<void> {
    const entry = this.opened;
    if (entry === null) {
      return;
    }
    const answer = await showDialog({
      title: __('Deprecate %1?', entry.id),
      body: __(
        '"%1" will no longer be given to runs. Its file stays in the %2 library.',
        entry.title,
        term(entry.level)
      ),
      buttons: [
        Dialog.cancelButton({ label: __('Cancel') }),
        Dialog.warnButton({ label: __('Deprecate') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      const done = await this.options.api.deprecateExperience(
        entry.level,
        entry.id
      );
      this.tell(done.line);
      this.closeDocument();
      await this.refreshLibrary();
    } catch (error) {
      this.tell(error);
    }
  }

  // -- the chat's run ----------------------------------------------------------------------------------

  async refreshRun(): Promise<void> {
    const id = this.sessionId;
    if (id === null) {
      return;
    }
    const asked = ++this.latest.run;
    try {
      const records = newestFirst(await this.options.api.sessionExperience(id));
      if (asked !== this.latest.run || id !== this.sessionId) {
        return;
      }
      this.records.replaceChildren(
        ...records.map(record => {
          const { heading, lines } = describeRecord(record);
          const node = el('li', 'nini-exp-record');
          node.dataset.type = record.type;
          const head = el('div', 'nini-exp-record-head');
          head.append(
            el('span', 'nini-exp-record-title', heading),
            el(
              'span',
              'nini-exp-record-date',
              (record.ts ?? '').slice(0, 16).replace('T', ' ')
            )
          );
          const list = el('ul', 'nini-exp-record-lines');
          list.append(...lines.map(line => el('li', undefined, line)));
          node.append(head, list);
          return node;
        })
      );
      this.runMessage.textContent = records.length
        ? ''
        : __('No experience was given to or captured from this session yet.');
    } catch (error) {
      if (asked === this.latest.run && id === this.sessionId) {
        this.runMessage.textContent =
          error instanceof NiniApiError
            ? `${error.code}: ${error.message}`
            : String(error);
      }
    }
  }

  private tell(what: unknown): void {
    tell(this.message, what);
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}

function levelSelect(label: string, automatic: boolean): HTMLSelectElement {
  const select = el('select', 'nini-exp-level-select');
  select.setAttribute('aria-label', label);
  if (automatic) {
    select.append(
      Object.assign(el('option', undefined, __('Library: nini decides')), {
        value: ''
      })
    );
  }
  for (const level of LEVELS) {
    select.append(
      Object.assign(
        el(
          'option',
          undefined,
          automatic ? __('Library: %1', term(level)) : term(level)
        ),
        { value: level }
      )
    );
  }
  return select;
}

function score(key: string, label: string, value: unknown): HTMLElement {
  const node = el('span', 'nini-exp-score', `${label} ${scoreText(value)}`);
  node.dataset.score = key;
  if (typeof value === 'number') {
    node.dataset.low = String(value < 0.5);
  }
  return node;
}

function problem(line: string): HTMLElement {
  const node = el('div', 'nini-exp-problem', line);
  node.setAttribute('role', 'note');
  return node;
}
