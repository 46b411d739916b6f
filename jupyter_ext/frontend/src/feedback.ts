/**
 * The feedback control under an answer or a report: thumbs up (accept), thumbs down (reject) and
 * "partly", the last two opening a small form for the signals and a comment. One feedback per
 * output from this control; it then shows what was learned.
 */
import { NiniApi } from './api';
import { el, tell } from './dom';
import { describeLearned, FeedbackAction, SIGNALS } from './prefs';

export function feedbackControl(api: NiniApi, runId: string, what: string): HTMLElement {
  const box = el('div', 'nini-feedback');
  box.dataset.runId = runId;
  const buttons = el('div', 'nini-feedback-buttons');
  const up = el('button', 'jp-Button jp-mod-styled nini-feedback-up', '👍');
  const down = el('button', 'jp-Button jp-mod-styled nini-feedback-down', '👎');
  const partly = el('button', 'jp-Button jp-mod-styled nini-feedback-partial', 'Partly');
  up.setAttribute('aria-label', `Good ${what}: accept it`);
  down.setAttribute('aria-label', `Bad ${what}: reject it and say why`);
  partly.setAttribute('aria-label', `Partly good ${what}: say what to change`);
  const status = el('div', 'nini-feedback-status');
  const form = signalForm();
  form.node.hidden = true;
  let action: FeedbackAction = 'reject';

  const send = async (chosen: FeedbackAction, signals: string[], comment: string): Promise<void> => {
    for (const button of box.querySelectorAll('button')) {
      (button as HTMLButtonElement).disabled = true;
    }
    try {
      const learned = await api.feedback({ run_id: runId, action: chosen, signals, comment: comment || undefined });
      tell(status, describeLearned(chosen, learned));
      form.node.hidden = true;
      box.dataset.sent = chosen;
    } catch (error) {
      tell(status, error);
      for (const button of box.querySelectorAll('button')) {
        (button as HTMLButtonElement).disabled = false;
      }
    }
  };
  up.onclick = () => void send('accept', [], '');
  const open = (chosen: FeedbackAction) => () => {
    action = chosen;
    form.node.hidden = false;
    form.node.dataset.action = chosen;
  };
  down.onclick = open('reject');
  partly.onclick = open('partial');
  form.onSend = (signals, comment) => void send(action, signals, comment);
  buttons.append(up, down, partly);
  box.append(buttons, form.node, status);
  return box;
}

interface SignalForm {
  node: HTMLFormElement;
  onSend: (signals: string[], comment: string) => void;
}

function signalForm(): SignalForm {
  const node = el('form', 'nini-feedback-form');
  const result: SignalForm = { node, onSend: () => undefined };
  const boxes = SIGNALS.map(([name, label]) => {
    const option = el('label', 'nini-feedback-signal');
    const input = el('input');
    input.type = 'checkbox';
    input.value = name;
    option.append(input, ` ${label}`);
    return { option, input };
  });
  const comment = el('textarea', 'nini-feedback-comment');
  comment.rows = 2;
  comment.placeholder = 'What should change? (optional)';
  comment.setAttribute('aria-label', 'Your comment');
  const submit = el('button', 'jp-Button jp-mod-styled jp-mod-accept nini-feedback-send', 'Send');
  submit.type = 'submit';
  node.append(...boxes.map(item => item.option), comment, submit);
  node.onsubmit = event => {
    event.preventDefault();
    result.onSend(boxes.filter(item => item.input.checked).map(item => item.input.value), comment.value.trim());
  };
  return result;
}
