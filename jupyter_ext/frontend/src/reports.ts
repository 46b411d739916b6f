/**
 * The Reports tab: generate the open session's layered report, list its reports, open one's HTML
 * in a sandboxed iframe (no scripts, no same-origin), download its files and each chart format;
 * export the session (`ExportControls`).
 */
import { Widget } from '@lumino/widgets';

import { NiniApi, NiniApiError, ReportInfo } from './api';
import { ExportControls } from './exporting';
import { feedbackControl } from './feedback';
import { el } from './render';

export class ReportsView extends Widget {
  sessionId: string | null = null;
  private readonly generate = el('button', 'jp-Button jp-mod-accept nini-generate-report', 'Generate report');
  private readonly list = el('ul', 'nini-report-list');
  private readonly message = el('div', 'nini-report-message');
  private readonly frame = el('iframe', 'nini-report-frame');
  private readonly exports: ExportControls;

  constructor(private readonly api: NiniApi) {
    super();
    this.addClass('nini-reports');
    this.title.label = 'Reports';
    this.generate.setAttribute('aria-label', "Generate the session's report");
    this.generate.onclick = () => void this.create();
    this.frame.setAttribute('sandbox', ''); // no scripts, no forms, an opaque origin
    this.frame.title = 'Report';
    this.frame.hidden = true;
    this.list.setAttribute('aria-label', 'Reports');
    this.exports = new ExportControls(api);
    this.node.append(this.generate, this.exports.node, this.message, this.list, this.frame);
    this.showSession(null);
  }

  showSession(id: string | null): void {
    this.sessionId = id;
    this.generate.disabled = id === null;
    this.exports.showSession(id);
    this.frame.hidden = true;
    this.frame.removeAttribute('src');
    this.list.replaceChildren();
    this.message.textContent = id === null ? 'Open or start a chat session to see its reports.' : '';
    if (id !== null && this.isVisible) {
      void this.refresh();
    }
  }

  async create(): Promise<void> {
    if (this.sessionId === null) {
      return;
    }
    this.generate.disabled = true;
    this.message.textContent = 'Writing the report…';
    try {
      const made = await this.api.generateReport(this.sessionId);
      this.message.textContent = `Report written: ${made.title}`;
      await this.refresh();
      const html = made.paths.html;
      if (html) {
        this.openReport(html);
      }
    } catch (error) {
      this.fail(error);
    } finally {
      this.generate.disabled = this.sessionId === null;
    }
  }

  async refresh(): Promise<void> {
    if (this.sessionId === null) {
      return;
    }
    try {
      const reports = await this.api.listReports(this.sessionId);
      this.list.replaceChildren(...reports.map(report => this.row(report)));
      if (!reports.length && !this.message.textContent) {
        this.message.textContent = 'No report yet.';
      }
    } catch (error) {
      this.fail(error);
    }
  }

  private row(report: ReportInfo): HTMLElement {
    const item = el('li', 'nini-report');
    const head = el('div', 'nini-report-head');
    head.append(el('span', 'nini-report-title', report.title), el('span', 'nini-report-date', report.created_at.slice(0, 16).replace('T', ' ')));
    if (report.files.html) {
      const open = el('button', 'jp-Button jp-mod-styled nini-report-open', 'Open');
      open.setAttribute('aria-label', `Open the report ${report.title}`);
      open.onclick = () => this.openReport(report.files.html);
      head.append(open);
    }
    const files = el('div', 'nini-report-files');
    for (const [format, path] of Object.entries(report.files)) {
      files.append(this.download(format, path));
    }
    item.append(head, files, feedbackControl(this.api, report.tool_call_id, 'report'));
    for (const chart of report.charts) {
      const line = el('div', 'nini-report-chart');
      line.append(el('span', undefined, chart.name));
      for (const [format, path] of Object.entries(chart.formats)) {
        line.append(this.download(format, path));
      }
      item.append(line);
    }
    return item;
  }

  private download(format: string, path: string): HTMLAnchorElement {
    const link = el('a', 'nini-download', format.toUpperCase());
    link.href = this.api.artifactUrl(this.sessionId!, path);
    link.download = path.split('/').pop() ?? path;
    link.setAttribute('aria-label', `Download ${link.download}`);
    return link;
  }

  private openReport(path: string): void {
    this.frame.src = this.api.artifactUrl(this.sessionId!, path);
    this.frame.hidden = false;
  }

  private fail(error: unknown): void {
    this.message.textContent = error instanceof NiniApiError ? `${error.code}: ${error.message}` : String(error);
    this.message.setAttribute('role', 'alert');
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}
