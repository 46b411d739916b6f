/**
 * The nini sidebar: one panel, six tabs (Chat, Skills, Reports, Experience, Preferences, Models).
 *
 * Each tab is an icon with its name beside it while every name fits, and the icon alone (the name as its
 * tooltip and accessible name) when they do not: JupyterLab's sidebar opens 250 px wide, where six names
 * would be cut to a letter or two. Whether they fit is measured, not guessed from a width, so it holds for
 * either language and any font.
 */
import { IEditorServices } from '@jupyterlab/codeeditor';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import {
  buildIcon,
  fileIcon,
  historyIcon,
  LabIcon,
  settingsIcon,
  TabPanelSvg,
  userIcon
} from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { NiniApi } from './api';
import { ChatView } from './chat';
import { ExperienceView } from './experience';
import { PreferencesView } from './preferences';
import { ProvidersView } from './providers';
import { ReportsView } from './reports';
import { SkillsView } from './skills';

export const niniIcon = new LabIcon({
  name: 'nini:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2zm3 9h2V9H7zm4 0h2V7h-2zm4 0h2v-3h-2z"/>' +
    '</g></svg>'
});

export interface PanelOptions {
  api: NiniApi;
  rendermime: IRenderMimeRegistry;
  notebooks: INotebookTracker | null;
  openSkill: (name: string) => void;
  /** Put a widget (a report) into JupyterLab's main area, or bring it to the front. */
  showInMain: (widget: Widget) => void;
}

export class NiniPanel extends TabPanelSvg {
  readonly chat: ChatView;
  readonly skills: SkillsView;
  readonly reports: ReportsView;
  readonly experience: ExperienceView;
  readonly preferences: PreferencesView;
  readonly models: ProvidersView;
  private readonly tabsWatch = new ResizeObserver(() => this.fitTabs());

  constructor(options: PanelOptions) {
    super({ tabPlacement: 'top', tabsMovable: false });
    this.id = 'nini-panel';
    this.addClass('nini-panel');
    this.title.icon = niniIcon;
    this.title.caption = 'nini';
    this.chat = new ChatView({ api: options.api, rendermime: options.rendermime, notebooks: options.notebooks,
                               openModels: () => (this.currentWidget = this.models) }); // prettier-ignore
    this.skills = new SkillsView({
      api: options.api,
      openSource: options.openSkill
    });
    this.reports = new ReportsView(options.api, options.showInMain);
    this.experience = new ExperienceView({
      api: options.api,
      rendermime: options.rendermime
    });
    this.preferences = new PreferencesView(options.api);
    this.models = new ProvidersView(options.api);
    this.models.changed.connect((_, info) => this.chat.noModel.show(info)); // a saved provider hides the card
    this.chat.sessionChanged.connect((_, id) => this.reports.showSession(id));
    this.chat.sessionChanged.connect((_, id) =>
      this.experience.showSession(id)
    );
    this.chat.eventsArrived.connect((_, events) =>
      this.experience.follow(events)
    );
    const tabs: [Widget, string, LabIcon][] = [
      [this.chat, 'chat', niniIcon],
      [this.skills, 'skills', buildIcon],
      [this.reports, 'reports', fileIcon],
      [this.experience, 'experience', historyIcon],
      [this.preferences, 'preferences', userIcon],
      [this.models, 'models', settingsIcon]
    ];
    for (const [view, name, icon] of tabs) {
      view.id = `nini-tab-${name}`; // not from the label, which is in the sidebar's language
      view.title.icon = icon;
      view.title.caption = view.title.label; // the tooltip, and the tab's name when only its icon shows
      this.addWidget(view);
    }
    this.tabBar.name = 'nini'; // the tab list's accessible name
    // measured after each layout that changes the bar's size: the sidebar dragged, shown, first drawn
    this.tabsWatch.observe(this.tabBar.node);
  }

  /** Names beside the icons while every name fits; icons alone (names as tooltips) when one would be cut. */
  private fitTabs(): void {
    if (this.tabBar.node.clientWidth === 0) {
      return; // hidden: measured again when shown
    }
    this.removeClass('nini-mod-compact');
    const labels = Array.from(
      this.tabBar.contentNode.querySelectorAll<HTMLElement>(
        '.lm-TabBar-tabLabel'
      )
    );
    this.toggleClass(
      'nini-mod-compact',
      labels.some(label => label.scrollWidth > label.clientWidth)
    );
  }

  dispose(): void {
    this.tabsWatch.disconnect();
    super.dispose();
  }
}

export type { IEditorServices };
