/**
 * The Reports tab: generate the open session's layered report in a chosen language, list its reports,
 * download their files and each chart format, export the session (`ExportControls`).
 *
 * A report opens in a tab of JupyterLab's main area, as a document does: its HTML (written by nini's
 * report builder through its sanitizer, nini/safe_html.py, and served with a script-free
 * Content-Security-Policy) in a sandboxed iframe, with no exception to the sandbox: no scripts, no
 * forms, an opaque origin.
 */
import { MainAreaWidget } from '@jupyterlab/apputils';
import { html5Icon, IFrame } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { NiniApi, NiniApiError, ReportInfo } from './api';
import { ExportControls } from './exporting';
import { feedbackControl } from './feedback';
import { __, Language, language } from './i18n';
import { el } from './render';

export class ReportsView extends Widget {
  sessionId: string | null = null;
  private readonly generate = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-generate-report',
    __('Generate report')
  );
  private readonly lang = el('select', 'jp-mod-styled nini-report-lang');
  private readonly list = el('ul', 'nini-report-list');
  private readonly message = el('div', 'nini-report-message');
  private readonly exports: ExportControls;
  private readonly opened = new Map<string, MainAreaWidget<IFrame>>();

  /** `showInMain` puts a report's tab into JupyterLab's main area, or brings it to the front. */
  constructor(
    private readonly api: NiniApi,
    private readonly showInMain: (widget: Widget) => void
  ) {
    super();
    this.addClass('nini-reports');
    this.title.label = __('Reports');
    this.generate.setAttribute(
      'aria-label',
      __("Generate the session's report")
    );
    this.generate.onclick = () => void this.create();
    for (const [value, label] of [
      ['en', __('English')],
      ['zh', __('Chinese')]
    ]) {
      this.lang.append(
        Object.assign(el('option', undefined, label), { value })
      );
    }
    this.lang.value = language(); // the sidebar's language unless the user picks the other
    this.lang.setAttribute('aria-label', __('Language of the report'));
    const toolbar = el('div', 'nini-toolbar');
    toolbar.append(this.generate, this.lang);
    this.list.setAttribute('aria-label', __('Reports'));
    this.exports = new ExportControls(api);
    this.node.append(toolbar, this.exports.node, this.message, this.list);
    this.showSession(null);
  }

  showSession(id: string | null): void {
    this.sessionId = id;
    this.generate.disabled = id === null;
    this.exports.showSession(id);
    this.list.replaceChildren();
    this.message.textContent =
      id === null ? __('Open or start a chat session to see its reports.') : '';
    if (id !== null && this.isVisible) {
      void this.refresh();
    }
  }

  async create(): Promise<void> {
    const id = this.sessionId;
    if (id === null) {
      return;
    }
    this.generate.disabled = true;
    this.message.removeAttribute('role');
    this.message.textContent = __('Writing the report…');
    try {
      const made = await this.api.generateReport(
        id,
        this.lang.value as Language
      );
      this.message.textContent = __('Report written: %1', made.title);
      await this.refresh();
      if (made.paths.html) {
        this.openReport(id, made.paths.html, made.title);
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
        this.message.textContent = __('No report yet.');
      }
    } catch (error) {
      this.fail(error);
    }
  }

  private row(report: ReportInfo): HTMLElement {
    const item = el('li', 'nini-report');
    const head = el('div', 'nini-report-head');
    head.append(
      el('span', 'nini-report-title', report.title),
      el(
        'span',
        'nini-report-date',
        report.created_at.slice(0, 16).replace('T', ' ')
      )
    );
    const sessionId = this.sessionId!;
    if (report.files.html) {
      const open = el(
        'button',
        'jp-Button jp-mod-styled nini-report-open',
        __('Open')
      );
      open.setAttribute('aria-label', __('Open the report %1', report.title));
      open.onclick = () =>
        this.openReport(sessionId, report.files.html, report.title);
      head.append(open);
    }
    const files = el('div', 'nini-report-files');
    for (const [format, path] of Object.entries(report.files)) {
      files.append(this.download(format, path));
    }
    item.append(
      head,
      files,
      feedbackControl(this.api, report.tool_call_id, 'report')
    );
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
    link.setAttribute('aria-label', __('Download %1', link.download));
    return link;
  }

  /** The report's tab in the main area: opened once per report, brought to the front after. */
  private openReport(sessionId: string, path: string, title: string): void {
    const key = `${sessionId}/${path}`;
    let tab = this.opened.get(key);
    if (tab === undefined || tab.isDisposed) {
      tab = reportTab(this.api.artifactUrl(sessionId, path), title);
      this.opened.set(key, tab);
      tab.disposed.connect(() => this.opened.delete(key));
    }
    this.showInMain(tab);
  }

  private fail(error: unknown): void {
    this.message.textContent =
      error instanceof NiniApiError
        ? `${error.code}: ${error.message}`
        : String(error);
    this.message.setAttribute('role', 'alert');
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}

let tabs = 0;

/** A main-area tab showing the report at `url` in an iframe sandboxed without exceptions. */
function reportTab(url: string, title: string): MainAreaWidget<IFrame> {
  const content = new IFrame({ sandbox: [], referrerPolicy: 'no-referrer' }); // sandbox="": no scripts, an opaque origin
  content.url = url;
  const frame = content.node.querySelector('iframe')!;
  frame.classList.add('nini-report-frame');
  frame.title = __('Report: %1', title);
  const tab = new MainAreaWidget({ content });
  tab.id = `nini-report-${++tabs}`;
  tab.addClass('nini-report-tab');
  tab.title.label = title;
  tab.title.caption = __('Report: %1', title);
  tab.title.icon = html5Icon;
  tab.title.closable = true;
  return tab;
}
