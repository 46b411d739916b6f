/**
 * The card of a step waiting to run in the user's own kernel (execution.approve_in_user_kernel):
 * why it asks, the step's whole code, and the three answers. The card follows the session's
 * `approval_resolved` events, so an answer given elsewhere (another page, REST, `%%nini`) shows
 * here too.
 *
 * Keyboard: the card takes the focus when it appears (`attendTo`); Enter allows once and Escape
 * rejects while the focus is in it (Enter on a focused button presses that button). In a hidden
 * chat a JupyterLab notification says a step waits.
 */
import { Notification } from '@jupyterlab/apputils';

import type { ApprovalDecision } from './api';
import { el } from './dom';
import { __, N_ } from './i18n';
import type { ApprovalItem, ApprovalState } from './model';

/** Show `code` highlighted in `host` (the chat's Markdown renderer). */
export type Highlight = (
  host: HTMLElement,
  code: string,
  language: string
) => void;

const STATE_TEXT: Record<ApprovalState, string> = {
  waiting: N_('Waiting for your OK'),
  once: N_('Allowed once'),
  session: N_('Allowed for this session'),
  reject: N_('Rejected: it did not run'),
  timed_out: N_('Nobody answered in time: it did not run'),
  stopped: N_('Stopped: it did not run')
};

/** Create the card of `item`, or bring it up to date. */
export function renderApproval(
  item: ApprovalItem,
  existing: HTMLElement | undefined,
  answer: (approvalId: string, decision: ApprovalDecision) => void,
  highlight: Highlight
): HTMLElement {
  const node = existing ?? buildApproval(item, answer, highlight);
  node.dataset.state = item.state;
  const waiting = item.state === 'waiting';
  node
    .querySelector('.nini-approval-actions')
    ?.toggleAttribute('hidden', !waiting);
  node.querySelector('.nini-approval-state')!.textContent = __(
    STATE_TEXT[item.state]
  );
  node.tabIndex = waiting ? 0 : -1; // a Tab stop while it waits for an answer
  return node;
}

function buildApproval(
  item: ApprovalItem,
  answer: (approvalId: string, decision: ApprovalDecision) => void,
  highlight: Highlight
): HTMLElement {
  const node = el('div', 'nini-approval');
  node.setAttribute('role', 'group');
  node.setAttribute(
    'aria-label',
    __('A step waits for your approval (Enter: allow once, Escape: reject)')
  );
  const why = el(
    'div',
    'nini-approval-why',
    __(
      'This step runs in your kernel, not sandboxed: it can read and change your variables and files.'
    )
  );
  const code = el('div', 'nini-approval-code');
  code.textContent = item.code; // until highlighted
  highlight(code, item.code, item.language);
  const actions = el('div', 'nini-approval-actions');
  const answers: [ApprovalDecision, string, string, string][] = [
    [
      'once',
      __('Allow once'),
      'jp-mod-accept',
      __('Run this step in your kernel (Enter)')
    ],
    [
      'session',
      __('Allow for this session'),
      '',
      __(
        "Run this step and the session's next steps in your kernel without asking"
      )
    ],
    [
      'reject',
      __('Reject'),
      'jp-mod-reject',
      __('Do not run this step (Escape)')
    ]
  ];
  const decide = (decision: ApprovalDecision) => {
    if (
      node.dataset.state !== 'waiting' ||
      actions.querySelector('button:disabled')
    ) {
      return; // answered already (here, or elsewhere and the event is in)
    }
    actions
      .querySelectorAll('button')
      .forEach(button => ((button as HTMLButtonElement).disabled = true));
    answer(item.approvalId, decision);
  };
  for (const [decision, label, style, description] of answers) {
    const button = el(
      'button',
      ['jp-Button', 'jp-mod-styled', style, `nini-approval-${decision}`]
        .filter(Boolean)
        .join(' '),
      label
    );
    button.title = description;
    button.onclick = () => decide(decision);
    actions.append(button);
  }
  node.addEventListener('keydown', event => {
    if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation(); // not JupyterLab's Escape (which would leave the panel)
      decide('reject');
    } else if (
      event.key === 'Enter' &&
      !event.isComposing &&
      !(event.target as HTMLElement).closest('button')
    ) {
      event.preventDefault();
      decide('once');
    }
  });
  node.append(el('div', 'nini-approval-state'), why, code, actions);
  return node;
}

/** Let the buttons of a card whose answer did not reach the server be pressed again. */
export function enableAnswers(node: HTMLElement | undefined): void {
  node
    ?.querySelectorAll('.nini-approval-actions button')
    .forEach(button => ((button as HTMLButtonElement).disabled = false));
}

const notified = new Map<string, string>(); // approval id -> the JupyterLab notification about it

/**
 * Make sure a person sees a step that waits for them: in a visible chat the card takes the focus
 * (unless the person is typing elsewhere, in a notebook say); in a hidden one a JupyterLab
 * notification says so, with "Show" to bring the chat up. Once answered (anywhere), the
 * notification goes.
 */
export function attendTo(
  item: ApprovalItem,
  card: HTMLElement,
  chat: HTMLElement,
  visible: boolean,
  reveal: () => void
): void {
  const shown = notified.get(item.approvalId);
  if (item.state !== 'waiting') {
    if (shown !== undefined) {
      Notification.dismiss(shown);
      notified.delete(item.approvalId);
    }
    return;
  }
  const focusFree =
    document.activeElement === null ||
    document.activeElement === document.body ||
    chat.contains(document.activeElement);
  if (visible && focusFree) {
    card.focus();
    card.scrollIntoView({ block: 'nearest' });
  } else if (!visible && shown === undefined) {
    const id = Notification.warning(
      __(
        'nini: a step waits for your OK. It runs in your kernel, not sandboxed.'
      ),
      {
        autoClose: false,
        actions: [
          {
            label: __('Show'),
            caption: __('Show the step and its code in the nini chat'),
            displayType: 'accent',
            callback: () => {
              reveal();
              requestAnimationFrame(() => card.focus());
            }
          }
        ]
      }
    );
    notified.set(item.approvalId, id);
  }
}
