/**
 * The session's export, under the Reports tab: a notebook whose steps re-run in nini's sandbox
 * (`%%nini_run` cells; the default), or as plain code for the reader's own kernel, or Markdown.
 * Each is a link to `GET /nini/api/sessions/ID/export`; the file itself says the code is the agent's.
 */
import { NiniApi } from './api';
import { __ } from './i18n';
import { el } from './render';

export class ExportControls {
  readonly node = el('div', 'nini-export');
  private readonly notebook = el(
    'a',
    'jp-Button jp-mod-styled nini-export-notebook',
    __('Export notebook')
  );
  private readonly markdown = el(
    'a',
    'jp-Button jp-mod-styled nini-export-markdown',
    __('Export Markdown')
  );
  private readonly sandboxed = el('input', 'nini-export-sandboxed');
  private sessionId: string | null = null;

  constructor(private readonly api: NiniApi) {
    this.sandboxed.type = 'checkbox';
    this.sandboxed.checked = true; // re-running the agent's code stays as contained as its first run
    this.sandboxed.onchange = () => this.update();
    const label = el('label', 'nini-export-choice');
    label.title = __(
      "On: each step of the notebook re-runs in nini's sandbox, through %%nini_run. Off: the steps are plain cells that run in your own kernel, unsandboxed."
    );
    label.append(
      this.sandboxed,
      el('span', undefined, __("Re-run in nini's sandbox"))
    );
    this.node.append(this.notebook, label, this.markdown);
    this.showSession(null);
  }

  showSession(id: string | null): void {
    this.sessionId = id;
    this.node.hidden = id === null;
    this.update();
  }

  private update(): void {
    if (this.sessionId === null) {
      this.notebook.removeAttribute('href');
      this.markdown.removeAttribute('href');
      return;
    }
    const sandboxed = this.sandboxed.checked;
    this.notebook.href = this.api.exportUrl(this.sessionId, 'ipynb', sandboxed);
    this.notebook.download = `nini-session-${this.sessionId}.ipynb`;
    this.notebook.setAttribute(
      'aria-label',
      sandboxed
        ? __("Export the session as a notebook that re-runs in nini's sandbox")
        : __('Export the session as a notebook of plain cells (unsandboxed)')
    );
    this.markdown.href = this.api.exportUrl(this.sessionId, 'md', false);
    this.markdown.download = `nini-session-${this.sessionId}.md`;
    this.markdown.setAttribute(
      'aria-label',
      __('Export the session as Markdown')
    );
  }
}
