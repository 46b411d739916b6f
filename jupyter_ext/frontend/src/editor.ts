/**
 * A SKILL.md in JupyterLab's own editor (CodeMirror through IEditorServices), saved through nini's
 * API, which validates it, writes it atomically and keeps the previous version as SKILL.md.bak.
 * A user's skills live in NINI_HOME, usually outside the folder Jupyter serves, so the file is not
 * opened through the file browser's documents.
 */
import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import {
  CodeEditor,
  CodeEditorWrapper,
  IEditorServices
} from '@jupyterlab/codeeditor';
import { saveIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { NiniApi, NiniApiError } from './api';
import { __ } from './i18n';
import { el } from './render';

export async function openSkillEditor(
  api: NiniApi,
  services: IEditorServices,
  name: string
): Promise<MainAreaWidget> {
  const source = await api.skillSource(name);
  const model = new CodeEditor.Model({ mimeType: 'text/markdown' });
  model.sharedModel.setSource(source.content);
  const editor = new CodeEditorWrapper({
    factory: services.factoryService.newDocumentEditor,
    model
  });
  const status = el('div', 'nini-editor-status');
  status.setAttribute('role', 'status');
  const body = new Widget({ node: status });
  editor.addClass('nini-skill-editor');
  const layoutHost = new MainAreaWidget({ content: editor });
  layoutHost.id = `nini-skill-${name}`;
  layoutHost.title.label = `${name}/SKILL.md`;
  layoutHost.title.closable = true;
  const save = async () => {
    try {
      const reply = await api.saveSkillSource(
        name,
        model.sharedModel.getSource()
      );
      const warnings: string[] = reply?.warnings ?? [];
      status.textContent = warnings.length
        ? __('Saved with warnings: %1.', warnings.join('; '))
        : __('Saved.');
      status.dataset.ok = 'true';
    } catch (error) {
      status.dataset.ok = 'false';
      status.textContent =
        error instanceof NiniApiError
          ? `${error.code}: ${error.message}`
          : String(error);
    }
  };
  layoutHost.toolbar.addItem(
    'save',
    new ToolbarButton({
      icon: saveIcon,
      onClick: () => void save(),
      tooltip: __('Save the SKILL.md (validated)')
    })
  );
  layoutHost.toolbar.addItem('status', body);
  if (!source.editable) {
    status.textContent = __(
      'A %1 skill: saving makes your own copy, which takes its place.',
      source.source
    );
  }
  editor.node.addEventListener('keydown', event => {
    if ((event.ctrlKey || event.metaKey) && event.key === 's') {
      event.preventDefault();
      void save();
    }
  });
  return layoutHost;
}
