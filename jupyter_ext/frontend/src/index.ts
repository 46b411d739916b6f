/**
 * nini in JupyterLab: the sidebar (chat with the agent, every step live, skills, reports, models),
 * its commands in the palette and a launcher tile.
 */
import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IEditorServices } from '@jupyterlab/codeeditor';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { NiniApi, NiniApiError } from './api';
import { openSkillEditor } from './editor';
import { NiniPanel, niniIcon } from './panel';

const COMMANDS = {
  open: 'nini:open',
  newChat: 'nini:new-chat',
  stop: 'nini:stop',
  report: 'nini:generate-report'
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nini:sidebar',
  description: 'The nini sidebar: chat with the agent, watch each step live, manage skills, reports and models.',
  autoStart: true,
  requires: [ILabShell, IRenderMimeRegistry],
  optional: [ICommandPalette, ILauncher, INotebookTracker, IEditorServices],
  activate: (
    app: JupyterFrontEnd,
    shell: ILabShell,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    notebooks: INotebookTracker | null,
    editors: IEditorServices | null
  ) => {
    const api = new NiniApi();
    const openSkill = async (name: string) => {
      if (editors === null) {
        return;
      }
      const id = `nini-skill-${name}`;
      const open = Array.from(shell.widgets('main')).find(widget => widget.id === id);
      if (open) {
        shell.activateById(id);
        return;
      }
      try {
        shell.add(await openSkillEditor(api, editors, name), 'main');
        shell.activateById(id);
      } catch (error) {
        const message = error instanceof NiniApiError ? `${error.code}: ${error.message}` : String(error);
        console.warn(`nini: cannot open ${name}: ${message}`);
      }
    };
    const panel = new NiniPanel({ api, rendermime, notebooks, openSkill: name => void openSkill(name) });
    shell.add(panel, 'left', { rank: 600 });

    const reveal = () => {
      shell.activateById(panel.id);
      panel.currentWidget = panel.chat;
    };
    app.commands.addCommand(COMMANDS.open, {
      label: 'Open nini',
      caption: 'Chat with the nini agent about your data',
      icon: niniIcon,
      execute: reveal
    });
    app.commands.addCommand(COMMANDS.newChat, {
      label: 'nini: New Chat',
      execute: () => {
        reveal();
        panel.chat.newChat();
      }
    });
    app.commands.addCommand(COMMANDS.stop, {
      label: 'nini: Stop the Run',
      isEnabled: () => panel.chat.running,
      execute: () => panel.chat.cancel()
    });
    app.commands.addCommand(COMMANDS.report, {
      label: 'nini: Generate Report',
      isEnabled: () => panel.chat.sessionId !== null,
      execute: async () => {
        shell.activateById(panel.id);
        panel.currentWidget = panel.reports;
        await panel.reports.create();
      }
    });
    for (const command of Object.values(COMMANDS)) {
      palette?.addItem({ command, category: 'nini' });
    }
    launcher?.add({ command: COMMANDS.open, category: 'Other', rank: 0 });
  }
};

export default plugin;
