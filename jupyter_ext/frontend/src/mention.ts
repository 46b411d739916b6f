/**
 * `@` in the question: a small list of the active notebook's cells and the file browser's files
 * that match what follows the `@`, operable by keyboard (↑ ↓ to move, Enter or Tab to attach, Esc
 * to close) and by mouse. Attaching takes the `@word` out of the question and adds a chip.
 *
 * The question box stays focused throughout (the list is its `aria-controls`, the highlighted
 * option its `aria-activedescendant`), as in a combobox, so typing goes on as usual.
 */
import { el } from './dom';
import { matchMentions, MentionCandidate, mentionAt } from './context';
import { __ } from './i18n';

let lists = 0; // ids of the lists on the page

export class MentionList {
  readonly node = el('ul', 'nini-mention-list');
  private matches: MentionCandidate[] = [];
  private active = 0;
  private start = -1; // where the `@` being completed is; -1: closed
  private candidates: Promise<MentionCandidate[]> | null = null; // read once per `@`

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly source: () => Promise<MentionCandidate[]>,
    private readonly pick: (candidate: MentionCandidate) => void
  ) {
    this.node.id = `nini-mention-list-${++lists}`;
    this.node.setAttribute('role', 'listbox');
    this.node.setAttribute('aria-label', __('Cells and files to attach'));
    this.node.hidden = true;
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-controls', this.node.id);
    input.addEventListener('input', () => void this.update());
    input.addEventListener('blur', () => this.close());
    // capture: before the question box's own keydown (Enter sends the question), so that Enter
    // attaches while the list is open
    input.addEventListener('keydown', event => this.key(event), true);
  }

  get open(): boolean {
    return this.start >= 0;
  }

  private async update(): Promise<void> {
    const found = mentionAt(
      this.input.value,
      this.input.selectionStart ?? this.input.value.length
    );
    if (found === null) {
      this.close();
      return;
    }
    if (found.start !== this.start || this.candidates === null) {
      this.candidates = this.source().catch(() => []);
    }
    this.start = found.start;
    const candidates = await this.candidates;
    if (this.start !== found.start) {
      return; // closed or moved on while the files were read
    }
    this.matches = matchMentions(found.query, candidates);
    this.active = Math.min(this.active, Math.max(0, this.matches.length - 1));
    this.render();
  }

  private render(): void {
    const options = this.matches.map((candidate, index) => {
      const option = el('li', 'nini-mention-option');
      option.id = `${this.node.id}-${index}`;
      option.setAttribute('role', 'option');
      option.setAttribute('aria-selected', String(index === this.active));
      option.dataset.kind = candidate.kind;
      option.dataset.key = candidate.key;
      option.append(
        el('span', 'nini-mention-label', candidate.label),
        el('span', 'nini-mention-detail', candidate.detail)
      );
      option.onmousedown = event => {
        event.preventDefault(); // the question box keeps the focus
        this.choose(index);
      };
      return option;
    });
    if (!options.length) {
      const none = el('li', 'nini-mention-none', __('No cell or file matches'));
      none.setAttribute('role', 'option');
      none.setAttribute('aria-disabled', 'true');
      options.push(none);
    }
    this.node.replaceChildren(...options);
    this.node.hidden = false;
    if (this.matches.length) {
      this.input.setAttribute(
        'aria-activedescendant',
        `${this.node.id}-${this.active}`
      );
      this.node.children[this.active]?.scrollIntoView({ block: 'nearest' });
    } else {
      this.input.removeAttribute('aria-activedescendant');
    }
  }

  private key(event: KeyboardEvent): void {
    if (!this.open || event.isComposing) {
      return;
    }
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1 };
    if (event.key in moves && this.matches.length) {
      this.active =
        (this.active + moves[event.key] + this.matches.length) %
        this.matches.length;
      this.render();
    } else if (
      (event.key === 'Enter' || event.key === 'Tab') &&
      !event.shiftKey &&
      this.matches.length
    ) {
      this.choose(this.active);
    } else if (event.key === 'Escape') {
      this.close();
    } else {
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
  }

  /** Attach match `index` and take its `@word` out of the question. */
  private choose(index: number): void {
    const candidate = this.matches[index];
    if (candidate === undefined) {
      return;
    }
    const value = this.input.value;
    const caret = this.input.selectionStart ?? value.length;
    this.input.value = value.slice(0, this.start) + value.slice(caret);
    this.input.setSelectionRange(this.start, this.start);
    this.close();
    this.pick(candidate);
  }

  close(): void {
    this.start = -1;
    this.active = 0;
    this.candidates = null;
    this.node.hidden = true;
    this.node.replaceChildren();
    this.input.removeAttribute('aria-activedescendant');
  }
}
