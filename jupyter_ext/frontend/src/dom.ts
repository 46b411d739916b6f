import { showError } from './errors';

/** The one DOM helper every view uses: an element with a class and text, in one call. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Show what happened in a view's status line: an error (for an API error, its code's plain sentence,
 * then the code and message: errors.ts) as an alert, anything else as a status. */
export function tell(line: HTMLElement, what: unknown): void {
  if (what instanceof Error) {
    showError(line, what);
  } else {
    line.textContent = String(what);
    delete line.dataset.code;
  }
  line.dataset.kind = what instanceof Error ? 'error' : 'info';
  line.setAttribute('role', what instanceof Error ? 'alert' : 'status');
}
