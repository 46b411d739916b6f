/**
 * Where the agent's code runs: the chat's "Sandbox | Notebook kernel" choice and the badge every
 * step card carries.
 *
 * The choice is a segmented control with the semantics of a WAI-ARIA radio group (one Tab stop;
 * the arrow keys, Home and End move and choose; Space and Enter choose), each segment with an
 * icon and a one-line explanation, so the choice and its consequence read at a glance; the chat's
 * `.nini-where` line says what it means with the notebook open now.
 */
import { kernelIcon, LabIcon, lockIcon } from '@jupyterlab/ui-components';

import type { RunWhere } from './api';
import { el } from './dom';
import { __, N_ } from './i18n';

const SEGMENTS: [RunWhere, string, string, LabIcon][] = [
  [
    'sandbox',
    N_('Sandbox'),
    N_('Isolated, with copies of your variables'),
    lockIcon
  ],
  [
    'kernel',
    N_('Notebook kernel'),
    N_('Your kernel and files, not sandboxed'),
    kernelIcon
  ]
];

let instances = 0; // ids for aria-describedby, unique in the page

/** The "Sandbox | Notebook kernel" segmented control; `changed` runs after the user picks one. */
export class WhereChoice {
  readonly node = el('div', 'nini-run-where');
  private current: RunWhere = 'sandbox'; // sandbox first: the notebook's kernel is a deliberate choice
  private readonly segments = new Map<RunWhere, HTMLButtonElement>();

  constructor(private readonly changed: () => void) {
    const id = `nini-run-where-${++instances}`;
    this.node.setAttribute('role', 'radiogroup');
    this.node.setAttribute('aria-label', __('Where the code runs'));
    for (const [value, label, explanation, icon] of SEGMENTS) {
      const segment = el('button', 'nini-run-where-segment');
      segment.type = 'button';
      segment.dataset.value = value;
      segment.setAttribute('role', 'radio');
      segment.setAttribute('aria-label', __(label));
      const line = el('span', 'nini-run-where-explanation', __(explanation));
      line.id = `${id}-${value}`;
      segment.setAttribute('aria-describedby', line.id);
      const head = el('span', 'nini-run-where-head');
      head.append(
        icon.element({ tag: 'span', className: 'nini-run-where-icon' }),
        el('span', 'nini-run-where-label', __(label))
      );
      segment.append(head, line);
      segment.onclick = () => this.choose(value, true);
      this.segments.set(value, segment);
      this.node.append(segment);
    }
    this.node.addEventListener('keydown', event => this.onKey(event));
    this.show();
  }

  get value(): RunWhere {
    return this.current;
  }

  private choose(value: RunWhere, focus: boolean): void {
    const changed = value !== this.current;
    this.current = value;
    this.show();
    if (focus) {
      this.segments.get(value)?.focus();
    }
    if (changed) {
      this.changed();
    }
  }

  /** The radio group's keys: the arrows (either direction, wrapping), Home and End choose as they move. */
  private onKey(event: KeyboardEvent): void {
    const values = SEGMENTS.map(([value]) => value);
    const at = values.indexOf(this.current);
    const step: Record<string, number> = {
      ArrowRight: 1,
      ArrowDown: 1,
      ArrowLeft: -1,
      ArrowUp: -1
    };
    let next: number | null = null;
    if (event.key in step) {
      next = (at + step[event.key] + values.length) % values.length;
    } else if (event.key === 'Home') {
      next = 0;
    } else if (event.key === 'End') {
      next = values.length - 1;
    }
    if (next !== null) {
      event.preventDefault();
      this.choose(values[next], true);
    }
  }

  private show(): void {
    for (const [value, segment] of this.segments) {
      const checked = value === this.current;
      segment.setAttribute('aria-checked', String(checked));
      segment.tabIndex = checked ? 0 : -1; // one Tab stop: the chosen segment
    }
    this.node.dataset.value = this.current;
  }
}

/** A step's badge: its words and what they mean, by where its code ran (`code_execution`'s `isolation`). */
const BADGES: Record<string, [string, string]> = {
  sandbox: [
    N_('sandboxed'),
    N_("In nini's sandbox: no network, your kernel and files out of reach")
  ],
  gateway: [
    N_('gateway'),
    N_("On the Jupyter server's kernel gateway, in its sandbox")
  ],
  unsandboxed: [
    N_('no sandbox'),
    N_(
      'In a nini kernel without a sandbox (execution.sandbox is none, or bubblewrap is missing)'
    )
  ],
  user_kernel: [
    N_('in your kernel'),
    N_(
      "In your notebook's kernel, with your variables and rights: not sandboxed"
    )
  ]
};
const R_BADGES: Record<string, [string, string]> = {
  sandbox: [
    N_('R sandbox'),
    N_(
      "In nini's sandboxed R worker: no network, your kernel and files out of reach"
    )
  ],
  unsandboxed: [
    N_('R, no sandbox'),
    N_(
      'In an R worker without a sandbox (execution.sandbox is none, or bubblewrap is missing)'
    )
  ]
};
const NO_CODE: [string, string] = [
  N_('nini'),
  N_("One of nini's own tools: no code the agent wrote runs")
];

/** The badge of a step (its words, their explanation and the `data-where` it is styled by); null
 * while a code step's place is not known (an older server's events). */
export function whereBadge(
  language: 'python' | 'r' | null,
  isolation: string | null
): { text: string; title: string; where: string } | null {
  if (language === null) {
    return { text: __(NO_CODE[0]), title: __(NO_CODE[1]), where: 'nini' };
  }
  const badge =
    isolation === null
      ? undefined
      : ((language === 'r' ? R_BADGES[isolation] : undefined) ??
        BADGES[isolation]);
  return badge === undefined
    ? null
    : { text: __(badge[0]), title: __(badge[1]), where: isolation! };
}
