/**
 * The feedback control under an answer or a report: thumbs up (accept), thumbs down (reject) and
 * "Partly". Thumbs up is sent at once; thumbs down and "Partly" open a small form for the signals and
 * a comment, which is hidden until then. The recorded choice shows as a pressed button
 * (`aria-pressed`), also when the session is opened again: `FeedbackMemory` reads what the server
 * recorded for the session's outputs. Another choice can be sent later: the server's learning
 * cancels out an earlier opposite one.
 *
 * The thumbs are SVG icons (LabIcon), not emoji, which render as empty boxes where no emoji font is
 * installed.
 */
import { LabIcon } from '@jupyterlab/ui-components';

import { NiniApi } from './api';
import { el, tell } from './dom';
import { __ } from './i18n';
import { describeLearned, FeedbackAction, SIGNALS } from './prefs';

// Material Design's thumb_up / thumb_down (Apache-2.0, as JupyterLab's own icons), themed by jp-icon3
const THUMB = (path: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16"><path class="jp-icon3" fill="#616161" d="${path}"/></svg>`;
export const thumbUpIcon = new LabIcon({
  name: 'nini:thumb-up',
  svgstr: THUMB(
    'M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z'
  )
});
export const thumbDownIcon = new LabIcon({
  name: 'nini:thumb-down',
  svgstr: THUMB(
    'M15 3H6c-.83 0-1.54.5-1.84 1.22l-3.02 7.05c-.09.23-.14.47-.14.73v2c0 1.1.9 2 2 2h6.31l-.95 4.57-.03.32c0 .41.17.79.44 1.06L9.83 23l6.59-6.59c.36-.36.58-.86.58-1.41V5c0-1.1-.9-2-2-2zm4 0v12h4V3h-4z'
  )
});

export type Judged = 'answer' | 'report';

/** The words of each button, by what is judged (whole sentences, so each translates as one). */
function labels(what: Judged): Record<FeedbackAction, string> {
  return what === 'report'
    ? {
        accept: __('Good report'),
        reject: __('Bad report: say why'),
        partial: __('Partly good report: say what to change')
      }
    : {
        accept: __('Good answer'),
        reject: __('Bad answer: say why'),
        partial: __('Partly good answer: say what to change')
      };
}

const memories = new WeakMap<NiniApi, FeedbackMemory>();

/** The feedback already recorded on the open session's outputs (by run id), read when the session is
 * opened, so its controls (under answers and reports alike) show the choice pressed; each control
 * also records here what it sends. One per API client: the sidebar's. */
export class FeedbackMemory {
  private sessionId: string | null = null;
  private actions = new Map<string, FeedbackAction>();

  private constructor(private readonly api: NiniApi) {}

  /** The memory the controls made with `api` share. */
  static of(api: NiniApi): FeedbackMemory {
    let memory = memories.get(api);
    if (memory === undefined) {
      memory = new FeedbackMemory(api);
      memories.set(api, memory);
    }
    return memory;
  }

  get(runId: string): FeedbackAction | undefined {
    return this.actions.get(runId);
  }

  set(runId: string, action: FeedbackAction): void {
    this.actions.set(runId, action);
  }

  /** Read session `id`'s feedback (null: a new chat, none) and press the controls already drawn
   * (their run ids are the session's own, wherever they are: the chat, the Reports tab). */
  async load(id: string | null): Promise<void> {
    this.sessionId = id;
    this.actions = new Map();
    if (id === null) {
      return;
    }
    let recorded: Record<string, FeedbackAction>;
    try {
      recorded = await this.api.sessionFeedback(id);
    } catch {
      return; // an older server, or the session is gone: the controls stay unpressed
    }
    if (this.sessionId !== id) {
      return; // another session was opened meanwhile
    }
    for (const [runId, action] of Object.entries(recorded)) {
      this.actions.set(runId, action);
    }
    document.querySelectorAll<HTMLElement>('.nini-feedback').forEach(box => {
      const action = this.actions.get(box.dataset.runId ?? '');
      if (action !== undefined && box.dataset.sent === undefined) {
        press(box, action);
      }
    });
  }
}

/** Show `action` as the recorded choice of the control `box`: its button pressed, the others not. */
export function press(box: HTMLElement, action: FeedbackAction): void {
  box.dataset.sent = action;
  box
    .querySelectorAll<HTMLButtonElement>('.nini-feedback-buttons button')
    .forEach(button => {
      button.setAttribute(
        'aria-pressed',
        String(button.dataset.action === action)
      );
    });
}

/** The control for the output `runId` (a turn id, a report's tool call id); `memory` presses the
 * choice already recorded and learns the new one. */
export function feedbackControl(
  api: NiniApi,
  runId: string,
  what: Judged,
  memory = FeedbackMemory.of(api)
): HTMLElement {
  const box = el('div', 'nini-feedback');
  box.dataset.runId = runId;
  const words = labels(what);
  const buttons = el('div', 'nini-feedback-buttons');
  buttons.setAttribute('role', 'group');
  buttons.setAttribute(
    'aria-label',
    what === 'report'
      ? __('Feedback on this report')
      : __('Feedback on this answer')
  );
  const button = (
    action: FeedbackAction,
    className: string,
    icon: LabIcon | null
  ): HTMLButtonElement => {
    const made = el(
      'button',
      `jp-Button jp-mod-minimal nini-feedback-button ${className}`,
      icon ? undefined : __('Partly')
    );
    made.type = 'button';
    made.dataset.action = action;
    made.setAttribute('aria-label', words[action]);
    made.setAttribute('aria-pressed', 'false');
    made.title = words[action];
    if (icon) {
      made.append(
        icon.element({ tag: 'span', className: 'nini-feedback-icon' })
      );
    }
    return made;
  };
  const up = button('accept', 'nini-feedback-up', thumbUpIcon);
  const down = button('reject', 'nini-feedback-down', thumbDownIcon);
  const partly = button('partial', 'nini-feedback-partial', null);
  const status = el('div', 'nini-feedback-status');
  const form = signalForm();
  form.node.hidden = true;
  const formId = `nini-feedback-form-${runId}`;
  form.node.id = formId;
  let action: FeedbackAction = 'reject';

  const busy = (on: boolean) =>
    box
      .querySelectorAll('button')
      .forEach(b => ((b as HTMLButtonElement).disabled = on));
  const showForm = (open: boolean) => {
    form.node.hidden = !open;
    down.setAttribute('aria-expanded', String(open && action === 'reject'));
    partly.setAttribute('aria-expanded', String(open && action === 'partial'));
  };
  const send = async (
    chosen: FeedbackAction,
    signals: string[],
    comment: string
  ): Promise<void> => {
    busy(true);
    try {
      const learned = await api.feedback({
        run_id: runId,
        action: chosen,
        signals,
        comment: comment || undefined
      });
      tell(status, describeLearned(chosen, learned));
      showForm(false);
      form.reset();
      press(box, chosen);
      memory.set(runId, chosen);
    } catch (error) {
      tell(status, error);
    } finally {
      busy(false);
    }
  };
  up.onclick = () => {
    showForm(false);
    if (box.dataset.sent !== 'accept') {
      void send('accept', [], '');
    }
  };
  const open = (chosen: FeedbackAction) => () => {
    const again = !form.node.hidden && action === chosen;
    action = chosen;
    form.node.dataset.action = chosen;
    showForm(!again); // a second click folds the form away
    if (!again) {
      form.first().focus();
    }
  };
  down.onclick = open('reject');
  partly.onclick = open('partial');
  for (const opener of [down, partly]) {
    opener.setAttribute('aria-controls', formId);
    opener.setAttribute('aria-expanded', 'false');
  }
  form.onSend = (signals, comment) => void send(action, signals, comment);
  form.node.onkeydown = event => {
    if (event.key === 'Escape') {
      event.stopPropagation();
      showForm(false);
      (action === 'partial' ? partly : down).focus();
    }
  };
  buttons.append(up, down, partly);
  box.append(buttons, form.node, status);
  const known = memory.get(runId);
  if (known !== undefined) {
    press(box, known);
  }
  return box;
}

interface SignalForm {
  node: HTMLFormElement;
  onSend: (signals: string[], comment: string) => void;
  first: () => HTMLElement;
  reset: () => void;
}

function signalForm(): SignalForm {
  const node = el('form', 'nini-feedback-form');
  node.setAttribute('aria-label', __('What should change?'));
  const boxes = SIGNALS.map(([name, label]) => {
    const option = el('label', 'nini-feedback-signal');
    const input = el('input');
    input.type = 'checkbox';
    input.value = name;
    option.append(input, ` ${__(label)}`);
    return { option, input };
  });
  const comment = el('textarea', 'nini-feedback-comment');
  comment.rows = 2;
  comment.placeholder = __('What should change? (optional)');
  comment.setAttribute('aria-label', __('Your comment'));
  const submit = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-feedback-send',
    __('Send')
  );
  submit.type = 'submit';
  node.append(...boxes.map(item => item.option), comment, submit);
  const result: SignalForm = {
    node,
    onSend: () => undefined,
    first: () => boxes[0].input,
    reset: () => node.reset()
  };
  node.onsubmit = event => {
    event.preventDefault();
    result.onSend(
      boxes.filter(item => item.input.checked).map(item => item.input.value),
      comment.value.trim()
    );
  };
  return result;
}
