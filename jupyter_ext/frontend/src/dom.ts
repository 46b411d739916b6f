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

/** Show what happened in a view's status line: an error (its code and message for an API error)
 * as an alert, anything else as a status. */
export function tell(line: HTMLElement, what: unknown): void {
  const api = what as { code?: unknown; message?: unknown };
  const isApiError = what instanceof Error && typeof api.code === 'string';
  line.textContent = isApiError ? `${api.code}: ${api.message}` : String(what instanceof Error ? what.message : what);
  line.dataset.kind = what instanceof Error ? 'error' : 'info';
  line.setAttribute('role', what instanceof Error ? 'alert' : 'status');
}
