/**
 * The Preferences tab: every rule the next prompts may carry (yours and learned ones) with their
 * confidence and evidence, delete or edit one, add your own, the two switches (learning,
 * injection), and exactly the block the next run of a skill type is given.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { NiniApi } from './api';
import { el, tell } from './dom';
import { __ } from './i18n';
import { parseValue, Preference, showValue } from './prefs';

export class PreferencesView extends Widget {
  private readonly message = el('div', 'nini-prefs-message');
  private readonly list = el('ul', 'nini-prefs-list');
  private readonly learning = el('input', 'nini-prefs-learning');
  private readonly injection = el('input', 'nini-prefs-injection');
  private readonly skillType = el('select', 'nini-prefs-skill-type');
  private readonly preview = el('pre', 'nini-prefs-preview');

  constructor(private readonly api: NiniApi) {
    super();
    this.addClass('nini-preferences');
    this.title.label = __('Preferences');
    const switches = el('div', 'nini-prefs-switches');
    for (const [input, label] of [
      [this.learning, __('Learn from my feedback')],
      [this.injection, __('Put them into prompts')]
    ] as const) {
      input.type = 'checkbox';
      input.setAttribute('aria-label', label);
      input.onchange = () => void this.switch();
      const wrap = el('label');
      wrap.append(input, ` ${label}`);
      switches.append(wrap);
    }
    for (const [type, label] of [
      ['answer', __('answer')],
      ['report', __('report')],
      ['chart', __('chart')]
    ]) {
      const option = el('option', undefined, label);
      option.value = type;
      this.skillType.append(option);
    }
    this.skillType.setAttribute('aria-label', __('Skill type of the preview'));
    this.skillType.onchange = () => void this.refreshPreview();
    this.list.setAttribute('aria-label', __('Preferences'));
    this.preview.setAttribute('role', 'region'); // a pre may carry a name only with a role
    this.preview.setAttribute(
      'aria-label',
      __('The block the next prompt carries')
    );
    const previewHead = el('div', 'nini-prefs-preview-head');
    previewHead.append(el('h3', undefined, __('Next prompt')), this.skillType);
    this.node.append(
      switches,
      this.message,
      this.addForm(),
      el('h3', undefined, __('Rules')),
      this.list,
      previewHead,
      this.preview
    );
  }

  async refresh(): Promise<void> {
    try {
      const [listed, switches] = await Promise.all([
        this.api.preferences(),
        this.api.switches()
      ]);
      this.learning.checked = switches.learning;
      this.injection.checked = switches.injection;
      this.list.replaceChildren(
        ...listed.preferences.map(row => this.row(row, listed.project_id))
      );
      if (!listed.preferences.length) {
        this.list.append(
          el(
            'li',
            'nini-prefs-empty',
            __('No preferences yet: add one, or give feedback on answers.')
          )
        );
      }
      await this.refreshPreview();
    } catch (error) {
      tell(this.message, error);
    }
  }

  private async refreshPreview(): Promise<void> {
    try {
      this.preview.textContent = (
        await this.api.previewPreferences(this.skillType.value || 'answer')
      ).block;
    } catch (error) {
      tell(this.message, error);
    }
  }

  private row(row: Preference, projectId: string): HTMLElement {
    const item = el('li', 'nini-pref');
    item.dataset.id = String(row.id);
    item.dataset.key = row.key;
    const scope =
      row.project_id === null
        ? __('global')
        : row.project_id === projectId
          ? __('this project')
          : row.project_id;
    const source = row.source === 'explicit' ? __('explicit') : __('implicit');
    item.append(
      el('span', 'nini-pref-key', row.key),
      el('span', 'nini-pref-value', showValue(row.value)),
      el(
        'span',
        'nini-pref-meta',
        __(
          '%1 · %2 · %3 evidence · %4',
          source,
          row.confidence.toFixed(2),
          row.evidence_count,
          scope
        )
      )
    );
    const edit = el(
      'button',
      'jp-Button jp-mod-styled nini-pref-edit',
      __('Edit')
    );
    edit.setAttribute('aria-label', __('Edit the value of %1', row.key));
    edit.onclick = () => void this.edit(row);
    const remove = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-warn nini-pref-delete',
      __('Delete')
    );
    remove.setAttribute('aria-label', __('Delete %1', row.key));
    remove.onclick = () => void this.remove(row);
    item.append(edit, remove);
    return item;
  }

  private addForm(): HTMLElement {
    const form = el('form', 'nini-prefs-add');
    const key = el('input', 'nini-prefs-add-key');
    const value = el('input', 'nini-prefs-add-value');
    const here = el('input', 'nini-prefs-add-project');
    key.placeholder = __('key, e.g. tone');
    value.placeholder = __('value, e.g. formal');
    key.setAttribute('aria-label', __('Key of the new rule'));
    value.setAttribute('aria-label', __('Value of the new rule'));
    here.type = 'checkbox';
    here.setAttribute('aria-label', __('This project only'));
    const label = el('label');
    label.append(here, ` ${__('this project only')}`);
    const add = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-accept nini-prefs-add-button',
      __('Add rule')
    );
    add.type = 'submit';
    form.append(key, value, label, add);
    form.onsubmit = async event => {
      event.preventDefault();
      try {
        const made = await this.api.addPreference(
          key.value.trim(),
          parseValue(value.value.trim()),
          here.checked ? '.' : null
        );
        tell(this.message, __('Added %1.', made.key));
        key.value = value.value = '';
        await this.refresh();
      } catch (error) {
        tell(this.message, error);
      }
    };
    return form;
  }

  private async edit(row: Preference): Promise<void> {
    const input = el('input', 'nini-pref-edit-value');
    input.value = showValue(row.value);
    const body = new Widget({ node: input });
    const answer = await showDialog({
      title: __('Edit %1', row.key),
      body,
      buttons: [
        Dialog.cancelButton({ label: __('Cancel') }),
        Dialog.okButton({ label: __('Save') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await this.api.editPreference(row.id, parseValue(input.value.trim()));
      tell(this.message, __('Saved %1 (now yours: confidence 1.00).', row.key));
      await this.refresh();
    } catch (error) {
      tell(this.message, error);
    }
  }

  private async remove(row: Preference): Promise<void> {
    const answer = await showDialog({
      title: __('Delete %1?', row.key),
      body: __('The next run is given the other preferences only.'),
      buttons: [
        Dialog.cancelButton({ label: __('Cancel') }),
        Dialog.warnButton({ label: __('Delete') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await this.api.deletePreference(row.id);
      tell(this.message, __('Deleted %1.', row.key));
      await this.refresh();
    } catch (error) {
      tell(this.message, error);
    }
  }

  private async switch(): Promise<void> {
    try {
      const now = await this.api.setSwitches({
        learning: this.learning.checked,
        injection: this.injection.checked
      });
      tell(
        this.message,
        __(
          'Learning %1, injection %2.',
          now.learning ? __('on') : __('off'),
          now.injection ? __('on') : __('off')
        )
      );
      await this.refreshPreview();
    } catch (error) {
      tell(this.message, error);
    }
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}
