/**
 * The Skills tab: the unified list (type filter, search), enable/disable, open a SKILL.md in
 * JupyterLab's editor, the scaffold's "New skill" form, and what `nini skills doctor` reports
 * shown beside the skill it concerns.
 */
import { Widget } from '@lumino/widgets';

import { NiniApi, SkillRecord } from './api';
import { tell } from './dom';
import { __, N_ } from './i18n';
import { el } from './render';

/** The skill categories, each with how it reads in the form (shown through `__(name)`). */
const CATEGORY_NAMES: Record<string, string> = {
  data: N_('data'),
  statistics: N_('statistics'),
  visualization: N_('visualization'),
  export: N_('export'),
  report: N_('report'),
  workflow: N_('workflow'),
  utility: N_('utility'),
  experiment_design: N_('experiment design'),
  other: N_('other')
};
export const CATEGORIES = Object.keys(CATEGORY_NAMES);

export interface SkillsOptions {
  api: NiniApi;
  openSource: (name: string) => void;
}

export class SkillsView extends Widget {
  private records: SkillRecord[] = [];
  private problems = new Map<string, string[]>();
  private readonly search = el('input', 'nini-skill-search');
  private readonly type = el('select', 'nini-skill-type');
  private readonly list = el('ul', 'nini-skill-list');
  private readonly form = el('form', 'nini-skill-form');
  private readonly message = el('div', 'nini-skill-message');

  constructor(private readonly options: SkillsOptions) {
    super();
    this.addClass('nini-skills');
    this.title.label = __('Skills');
    this.build();
  }

  private build(): void {
    const toolbar = el('div', 'nini-toolbar');
    this.search.type = 'search';
    this.search.placeholder = __('Search skills');
    this.search.setAttribute('aria-label', __('Search skills'));
    this.search.oninput = () => this.draw();
    for (const [value, label] of [
      ['', __('All types')],
      ['function', __('Function')],
      ['markdown', __('Markdown')]
    ]) {
      const option = el('option', undefined, label);
      option.value = value;
      this.type.append(option);
    }
    this.type.setAttribute('aria-label', __('Skill type'));
    this.type.onchange = () => this.draw();
    const create = el(
      'button',
      'jp-Button jp-mod-styled nini-new-skill',
      __('New skill')
    );
    create.type = 'button';
    create.setAttribute('aria-label', __('Create a new Markdown skill'));
    create.onclick = () => {
      this.form.hidden = !this.form.hidden;
      (this.form.querySelector('input') as HTMLInputElement | null)?.focus();
    };
    const reload = el('button', 'jp-Button jp-mod-styled', __('Refresh'));
    reload.type = 'button';
    reload.setAttribute('aria-label', __('Reload the skills'));
    reload.onclick = () => void this.refresh();
    toolbar.append(this.search, this.type, create, reload);
    this.buildForm();
    this.list.setAttribute('aria-label', __('Skills'));
    this.node.append(toolbar, this.form, this.message, this.list);
  }

  private buildForm(): void {
    this.form.hidden = true;
    const name = Object.assign(el('input'), {
      name: 'name',
      required: true,
      placeholder: __('name-in-kebab-case')
    });
    name.setAttribute('aria-label', __('Skill name'));
    const description = Object.assign(el('textarea'), {
      name: 'description',
      required: true,
      rows: 2,
      placeholder: __('What it does and when to use it')
    });
    description.setAttribute('aria-label', __('Skill description'));
    const category = Object.assign(el('select'), { name: 'category' });
    category.setAttribute('aria-label', __('Skill category'));
    for (const value of CATEGORIES) {
      category.append(
        Object.assign(el('option', undefined, __(CATEGORY_NAMES[value])), {
          value
        })
      );
    }
    const submit = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-accept nini-skill-create',
      __('Create')
    );
    submit.type = 'submit';
    this.form.append(name, description, category, submit);
    this.form.onsubmit = event => {
      event.preventDefault();
      void this.create(
        name.value.trim(),
        description.value.trim(),
        category.value
      );
    };
  }

  private async create(
    name: string,
    description: string,
    category: string
  ): Promise<void> {
    try {
      const record = await this.options.api.createSkill({
        name,
        description,
        category
      });
      this.form.reset();
      this.form.hidden = true;
      this.tell(__('Created %1.', record.name));
      await this.refresh();
    } catch (error) {
      this.tell(error);
    }
  }

  async refresh(): Promise<void> {
    try {
      const [records, problems] = await Promise.all([
        this.options.api.listSkills(),
        this.options.api.skillProblems().catch(() => null)
      ]);
      this.records = records;
      this.problems = problemsBySkill(problems);
      this.draw();
    } catch (error) {
      this.tell(error);
    }
  }

  private draw(): void {
    const query = this.search.value.trim().toLowerCase();
    const type = this.type.value;
    const shown = this.records.filter(
      record =>
        (!type || record.type === type) &&
        (!query ||
          `${record.name} ${record.description}`.toLowerCase().includes(query))
    );
    this.list.replaceChildren(...shown.map(record => this.row(record)));
    this.list.dataset.count = String(shown.length);
  }

  private row(record: SkillRecord): HTMLElement {
    const item = el('li', 'nini-skill');
    item.dataset.name = record.name;
    item.dataset.type = record.type;
    const toggle = el('input');
    toggle.type = 'checkbox';
    toggle.checked = record.enabled;
    toggle.setAttribute('aria-label', __('Enable %1', record.name));
    toggle.onchange = () => void this.setEnabled(record, toggle);
    const head = el('div', 'nini-skill-head');
    head.append(
      toggle,
      el('span', 'nini-skill-name', record.name),
      el(
        'span',
        `nini-badge nini-badge-${record.type}`,
        record.type === 'markdown' ? __('Markdown') : __('Function')
      )
    );
    if (record.type === 'markdown') {
      const open = el(
        'button',
        'jp-Button jp-mod-minimal nini-skill-open',
        __('Open')
      );
      open.setAttribute(
        'aria-label',
        __('Open the SKILL.md of %1', record.name)
      );
      open.onclick = () => this.options.openSource(record.name);
      head.append(open);
    }
    item.append(head, el('div', 'nini-skill-description', record.description));
    for (const problem of this.problems.get(record.name) ?? []) {
      item.append(el('div', 'nini-skill-problem', problem));
    }
    return item;
  }

  private async setEnabled(
    record: SkillRecord,
    toggle: HTMLInputElement
  ): Promise<void> {
    toggle.disabled = true;
    try {
      const updated = await this.options.api.setSkillEnabled(
        record.name,
        toggle.checked,
        record.type
      );
      record.enabled = updated.enabled;
      this.tell(
        updated.enabled
          ? __('%1 enabled.', record.name)
          : __('%1 disabled.', record.name)
      );
    } catch (error) {
      toggle.checked = record.enabled;
      this.tell(error);
    } finally {
      toggle.disabled = false;
    }
  }

  private tell(what: unknown): void {
    tell(this.message, what);
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}

/** The doctor's report as lines per skill name (whatever of it names a skill). */
export function problemsBySkill(report: any): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const add = (name: unknown, text: unknown) => {
    if (typeof name !== 'string' || !name || !text) {
      return;
    }
    found.set(name, [...(found.get(name) ?? []), String(text)]);
  };
  const entries: any[] = Array.isArray(report)
    ? report
    : Object.values(report ?? {}).flatMap(value =>
        Array.isArray(value) ? value : []
      );
  for (const entry of entries) {
    if (entry && typeof entry === 'object') {
      const text =
        entry.message ??
        entry.problem ??
        entry.reason ??
        [entry.kind, ...(entry.errors ?? []), ...(entry.warnings ?? [])]
          .filter(Boolean)
          .join(': ');
      add(entry.name ?? entry.skill, text);
    }
  }
  return found;
}
