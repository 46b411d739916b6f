/**
 * nini in JupyterLab: the sidebar (chat with the agent, every step live, skills, reports, experience,
 * models), its commands in the palette and a launcher tile.
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IEditorServices } from '@jupyterlab/codeeditor';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ITranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { NiniApi, NiniApiError } from './api';
import { openSkillEditor } from './editor';
import { __, setLanguage } from './i18n';
import { NiniPanel, niniIcon } from './panel';

const COMMANDS = {
  open: 'nini:open',
  newChat: 'nini:new-chat',
  stop: 'nini:stop',
  report: 'nini:generate-report',
  attachCell: 'nini:attach-cell',
  attachFile: 'nini:attach-file',
  experience: 'nini:open-experience',
  preferences: 'nini:open-preferences'
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nini:sidebar',
  description:
    'The nini sidebar: chat with the agent, watch each step live, manage skills, reports and models.',
  autoStart: true,
  requires: [ILabShell, IRenderMimeRegistry],
  optional: [
    ICommandPalette,
    ILauncher,
    INotebookTracker,
    IEditorServices,
    IDefaultFileBrowser,
    ITranslator
  ],
  activate: async (
    app: JupyterFrontEnd,
    shell: ILabShell,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    notebooks: INotebookTracker | null,
    editors: IEditorServices | null,
    files: IDefaultFileBrowser | null,
    translator: ITranslator | null
  ) => {
    const api = new NiniApi();
    // one language for every string, chosen before the first is made: ui.language, else JupyterLab's
    const ui = await api.uiSettings().catch(() => ({ language: 'auto' }));
    setLanguage(ui.language, translator?.languageCode);
    const openSkill = async (name: string) => {
      if (editors === null) {
        return;
      }
      const id = `nini-skill-${name}`;
      const open = Array.from(shell.widgets('main')).find(
        widget => widget.id === id
      );
      if (open) {
        shell.activateById(id);
        return;
      }
      try {
        shell.add(await openSkillEditor(api, editors, name), 'main');
        shell.activateById(id);
      } catch (error) {
        const message =
          error instanceof NiniApiError
            ? `${error.code}: ${error.message}`
            : String(error);
        console.warn(`nini: cannot open ${name}: ${message}`);
      }
    };
    const showInMain = (widget: Widget) => {
      if (!widget.isAttached) {
        shell.add(widget, 'main');
      }
      shell.activateById(widget.id);
    };
    const panel = new NiniPanel({
      api,
      rendermime,
      notebooks,
      openSkill: name => void openSkill(name),
      showInMain
    });
    shell.add(panel, 'left', { rank: 600 });

    const chat = () => panel.chat;
    const reveal = () => {
      shell.activateById(panel.id);
      panel.currentWidget = panel.chat;
    };
    panel.chat.revealRequested.connect(reveal); // a notification's "Show" (a step waits for an OK)
    app.commands.addCommand(COMMANDS.open, {
      label: __('Open nini'),
      caption: __('Chat with the nini agent about your data'),
      icon: niniIcon,
      execute: reveal
    });
    app.commands.addCommand(COMMANDS.newChat, {
      label: __('nini: New Chat'),
      execute: () => {
        reveal();
        panel.chat.newChat();
      }
    });
    app.commands.addCommand(COMMANDS.stop, {
      label: __('nini: Stop the Run'),
      isEnabled: () => panel.chat.running,
      execute: () => panel.chat.cancel()
    });
    app.commands.addCommand(COMMANDS.report, {
      label: __('nini: Generate Report'),
      isEnabled: () => panel.chat.sessionId !== null,
      execute: async () => {
        shell.activateById(panel.id);
        panel.currentWidget = panel.reports;
        await panel.reports.create();
      }
    });
    const openTab = (tab: Widget) => () => {
      shell.activateById(panel.id);
      panel.currentWidget = tab;
    };
    app.commands.addCommand(COMMANDS.experience, {
      label: __('nini: Open Experience'),
      caption: __(
        'Confirm experience candidates, read the libraries, see what the run was given'
      ),
      execute: openTab(panel.experience)
    });
    app.commands.addCommand(COMMANDS.preferences, {
      label: __('nini: Open Preferences'),
      caption: __(
        'See, change and switch the preferences nini learned or you wrote'
      ),
      execute: openTab(panel.preferences)
    });
    app.commands.addCommand(COMMANDS.attachCell, {
      label: args =>
        args.short
          ? __('Selected cells of the notebook')
          : __('nini: Attach cell to question'),
      caption: __('Send the selected cells with your next question to nini'),
      isEnabled: () => notebooks?.currentWidget?.content.activeCell != null,
      execute: () => {
        const current = notebooks?.currentWidget;
        if (!current) {
          return;
        }
        const notebook = current.content;
        const cells = notebook.widgets
          .filter(cell => notebook.isSelectedOrActive(cell))
          .map(cell => cell.model);
        chat().attachCells(current, cells);
        reveal();
      }
    });
    app.commands.addCommand(COMMANDS.attachFile, {
      label: args =>
        args.short
          ? __('Files selected in the file browser')
          : __('nini: Attach file to question'),
      caption: __(
        "Send the selected files' text with your next question to nini"
      ),
      isEnabled: () =>
        files !== null &&
        Array.from(files.selectedItems()).some(
          item => item.type !== 'directory'
        ),
      execute: async () => {
        await chat().attachments.addPaths(files?.selectedItems() ?? []);
        reveal();
      }
    });
    chat().attachments.useLab({
      commands: app.commands,
      contents: app.serviceManager.contents,
      files,
      attachCell: COMMANDS.attachCell,
      attachFile: COMMANDS.attachFile,
      onError: message => chat().attachError(message)
    });
    app.contextMenu.addItem({
      command: COMMANDS.attachCell,
      selector: '.jp-Notebook .jp-Cell',
      rank: 20
    });
    app.contextMenu.addItem({
      command: COMMANDS.attachFile,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 20
    });
    for (const command of Object.values(COMMANDS)) {
      palette?.addItem({ command, category: 'nini' });
    }
    // JupyterLab's own "Other" group, in JupyterLab's language (a category of our own words would be a second group)
    const other = translator?.load('jupyterlab').__('Other') ?? 'Other';
    launcher?.add({ command: COMMANDS.open, category: other, rank: 0 });
  }
};

export default plugin;
