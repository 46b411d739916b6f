/**
 * The Models tab: the configured providers (usable or why not), the model serving each purpose,
 * a form to add or edit a provider (the API key stays in an environment variable: only its name
 * is saved), and "Test", which makes one tiny real call and shows OK or the reason.
 *
 * The form guides: presets fill kind, base URL, key variable and a model to start from; each field
 * is checked before anything is sent (`validateProvider`), its problem shown beside it; and the key
 * variable's line says whether the server has it set (never its value) and how to set it.
 *
 * Providers are the server's: for a caller who may not change them (the server's GET says
 * `editable: false`, on a server that names its users) the tab is read-only: no form, no Edit,
 * and each provider's Test names it only, so the server calls it as configured.
 */
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { ModelsInfo, NiniApi, ProviderInfo } from './api';
import { el } from './dom';
import { reasonParts, showError } from './errors';
import { __, N_ } from './i18n';
import { KINDS, PRESETS, Preset, Problems, validateProvider } from './presets';

type Field =
  'name' | 'kind' | 'base_url' | 'model' | 'api_key_env' | PriceField;
type PriceField = 'input_per_mtok' | 'output_per_mtok' | 'currency';
const FIELDS: [Exclude<Field, 'kind'>, string, string][] = [
  ['name', N_('Name'), 'ollama'],
  ['base_url', N_('Base URL'), 'http://localhost:11434/v1'],
  ['model', N_('Model'), 'qwen2.5:7b'],
  ['api_key_env', N_('API key environment variable'), 'DEEPSEEK_API_KEY'],
  // optional: with both prices, each turn's footer shows its cost (./footer)
  ['input_per_mtok', N_('Price per million prompt tokens (optional)'), '0.27'],
  [
    'output_per_mtok',
    N_('Price per million completion tokens (optional)'),
    '1.10'
  ],
  ['currency', N_('Currency of the prices'), 'USD']
];

export class ProvidersView extends Widget {
  /** Emitted with what the server said of the models after each refresh (a save, a removal, showing the tab). */
  readonly changed = new Signal<this, ModelsInfo>(this);
  private readonly providers = el('ul', 'nini-provider-list');
  private readonly purposes = el('table', 'nini-purposes');
  private readonly form = el('form', 'nini-provider-form');
  private readonly result = el('div', 'nini-provider-result');
  private readonly inputs = new Map<
    Field,
    HTMLInputElement | HTMLSelectElement
  >();
  private readonly problems = new Map<Field, HTMLElement>();
  private readonly keyStatus = el('div', 'nini-key-status');
  private readonly testAll = el(
    'button',
    'jp-Button jp-mod-styled nini-models-test-all',
    __('Test every purpose')
  );
  private readonly tested = el('ul', 'nini-models-tested');
  private readonly editing = el('section', 'nini-provider-editing');
  private readonly readOnly = el(
    'p',
    'nini-models-read-only',
    __(
      'These providers belong to this server: only its administrators (server.admins) can change them. You can test them.'
    )
  );
  private editable = true;

  constructor(private readonly api: NiniApi) {
    super();
    this.addClass('nini-models');
    this.title.label = __('Models');
    this.buildForm();
    this.result.setAttribute('role', 'status');
    this.providers.setAttribute('aria-label', __('Providers'));
    this.testAll.setAttribute(
      'aria-label',
      __('Make one tiny call to the model each purpose would use first')
    );
    this.testAll.onclick = () => void this.testEveryPurpose();
    this.tested.setAttribute('aria-label', __('Test results per model'));
    this.readOnly.hidden = true;
    this.editing.append(
      el('h3', undefined, __('Add or edit a provider')),
      this.presetButtons(),
      this.form
    );
    this.node.append(el('h3', undefined, __('Providers')), this.readOnly, this.providers, this.editing, this.result,
                     el('h3', undefined, __('Model per purpose')), this.purposes, this.testAll, this.tested); // prettier-ignore
  }

  /** One button per preset: it fills the form (the name too, unless the user typed their own). */
  private presetButtons(): HTMLElement {
    const row = el('div', 'nini-presets');
    row.setAttribute('role', 'group');
    row.setAttribute('aria-label', __('Start from a preset'));
    row.append(el('span', 'nini-presets-label', __('Start from:')));
    for (const preset of PRESETS) {
      const button = el(
        'button',
        'jp-Button jp-mod-styled nini-preset',
        __(preset.label)
      );
      button.type = 'button';
      button.dataset.preset = preset.id;
      button.title = __(
        'Fill the form for %1 (%2)',
        __(preset.label),
        preset.base_url
      );
      button.onclick = () => this.usePreset(preset);
      row.append(button);
    }
    return row;
  }

  private usePreset(preset: Preset): void {
    const name = this.inputs.get('name')!;
    if (
      !name.value.trim() ||
      PRESETS.some(other => other.id === name.value.trim())
    ) {
      name.value = preset.id;
    }
    this.inputs.get('kind')!.value = preset.kind;
    this.inputs.get('base_url')!.value = preset.base_url;
    this.inputs.get('api_key_env')!.value = preset.api_key_env ?? '';
    const model = this.inputs.get('model') as HTMLInputElement;
    model.value = preset.model;
    model.placeholder = preset.modelHint;
    this.showProblems({});
    this.result.textContent = preset.model
      ? ''
      : __(
          'Enter the name of the model your %1 server has loaded.',
          preset.label
        );
    delete this.result.dataset.ok;
    void this.checkKey();
    (preset.model ? name : model).focus();
  }

  private buildForm(): void {
    const kind = el('select', 'jp-mod-styled');
    kind.name = 'kind';
    for (const [value, label] of KINDS) {
      kind.append(Object.assign(el('option', undefined, __(label)), { value }));
    }
    this.inputs.set('kind', kind);
    this.form.append(this.labelled('kind', __('Kind'), kind));
    for (const [field, label, placeholder] of FIELDS) {
      const input = el('input', 'jp-mod-styled');
      input.name = field;
      input.placeholder = placeholder;
      input.autocomplete = 'off';
      this.inputs.set(field, input);
      this.form.append(this.labelled(field, __(label), input));
    }
    const keyInput = this.inputs.get('api_key_env')!;
    keyInput.onchange = () => void this.checkKey();
    this.keyStatus.id = 'nini-key-status';
    this.keyStatus.setAttribute('role', 'status');
    keyInput.setAttribute(
      'aria-describedby',
      `${keyInput.getAttribute('aria-describedby')} ${this.keyStatus.id}`
    );
    keyInput.parentElement!.after(this.keyStatus);
    this.form.noValidate = true; // our own checks, said beside each field in the sidebar's language
    const save = el(
      'button',
      'jp-Button jp-mod-styled jp-mod-accept nini-provider-save',
      __('Save')
    );
    save.type = 'submit';
    save.setAttribute('aria-label', __('Save the provider to settings.json'));
    const test = el(
      'button',
      'jp-Button jp-mod-styled nini-provider-test',
      __('Test')
    );
    test.type = 'button';
    test.setAttribute(
      'aria-label',
      __('Test the provider with one small call')
    );
    test.onclick = () => void this.test();
    const buttons = el('div', 'nini-provider-buttons');
    buttons.append(save, test);
    this.form.append(buttons);
    this.form.onsubmit = event => {
      event.preventDefault();
      void this.save();
    };
  }

  /** A field with its label and the line its problem shows in (described by it for screen readers). */
  private labelled(
    field: Field,
    text: string,
    input: HTMLInputElement | HTMLSelectElement
  ): HTMLElement {
    const label = el('label', 'nini-field');
    const problem = el('span', 'nini-field-error');
    problem.id = `nini-provider-${field}-error`;
    problem.hidden = true;
    input.setAttribute('aria-describedby', problem.id);
    input.addEventListener('input', () => this.showProblem(field, undefined));
    this.problems.set(field, problem);
    label.append(el('span', undefined, text), input, problem);
    return label;
  }

  private showProblem(field: Field, text: string | undefined): void {
    const problem = this.problems.get(field)!;
    problem.textContent = text ?? '';
    problem.hidden = text === undefined;
    this.inputs
      .get(field)!
      .setAttribute('aria-invalid', String(text !== undefined));
  }

  /** Show each field's problem; focus the first field that has one. True when there are none. */
  private showProblems(problems: Problems): boolean {
    for (const field of this.inputs.keys()) {
      this.showProblem(field, problems[field]);
    }
    const first = [...this.inputs.keys()].find(
      field => problems[field] !== undefined
    );
    if (first !== undefined) {
      this.inputs.get(first)!.focus();
      this.result.textContent = __('Fix the marked fields first.');
      this.result.dataset.ok = 'false';
    }
    return first === undefined;
  }

  /** Whether the key variable in the form is set on the server, and how to set it if not. */
  private async checkKey(): Promise<void> {
    const name = this.inputs.get('api_key_env')!.value.trim();
    this.keyStatus.replaceChildren();
    delete this.keyStatus.dataset.set;
    if (!name) {
      this.keyStatus.textContent = __(
        'No key variable: right for a local server (Ollama, vLLM, LM Studio) that wants no key.'
      );
      return;
    }
    const problem = validateProvider(
      { name: '', kind: 'openai', model: 'm', api_key_env: name },
      false
    ).api_key_env;
    if (problem !== undefined) {
      this.showProblem('api_key_env', problem); // never sent: it may be a key pasted in the wrong field
      return;
    }
    try {
      const status = await this.api.keyVariable(name);
      if (this.inputs.get('api_key_env')!.value.trim() === name) {
        this.keyStatus.replaceChildren(keyStatusLine(status.name, status.set));
        this.keyStatus.dataset.set = String(status.set);
      }
    } catch (error) {
      showError(this.keyStatus, error);
    }
  }

  private provider(): ProviderInfo {
    const value = (name: Field) => this.inputs.get(name)!.value.trim();
    const provider: ProviderInfo = { name: value('name'), kind: value('kind') };
    for (const field of [
      'base_url',
      'model',
      'api_key_env',
      'currency'
    ] as const) {
      if (value(field)) {
        provider[field] = value(field);
      }
    }
    for (const field of ['input_per_mtok', 'output_per_mtok'] as const) {
      if (value(field)) {
        provider[field] = Number(value(field)); // NaN is the form's problem to say (validateProvider)
      }
    }
    return provider;
  }

  private edit(provider: ProviderInfo): void {
    for (const [name, input] of this.inputs) {
      input.value = String((provider as any)[name] ?? '');
    }
    this.showProblems({});
    this.result.textContent = '';
    void this.checkKey();
    this.inputs.get('name')!.focus();
  }

  async refresh(): Promise<void> {
    try {
      const info = await this.api.models();
      this.draw(info);
      this.changed.emit(info);
    } catch (error) {
      this.say(error);
    }
  }

  private draw(info: ModelsInfo & { editable?: boolean }): void {
    this.editable = info.editable !== false;
    this.node.dataset.editable = String(this.editable);
    this.editing.hidden = !this.editable;
    this.readOnly.hidden = this.editable;
    this.providers.replaceChildren(
      ...info.providers.map(provider => {
        const item = el('li', 'nini-provider');
        item.dataset.name = provider.name;
        item.dataset.usable = String(provider.usable !== false);
        item.append(
          el('span', 'nini-provider-name', provider.name),
          el('span', 'nini-badge', provider.kind),
          el('span', 'nini-provider-model', provider.model ?? ''),
          el(
            'span',
            'nini-provider-state',
            provider.usable === false
              ? __('not usable: %1', provider.reason ?? '')
              : __('usable')
          ),
          this.editable ? this.button(__('Edit'), __('Edit %1', provider.name), () => this.edit(provider))
            : this.button(__('Test'), __('Test %1 with one small call', provider.name), () => void this.test({ name: provider.name } as ProviderInfo)) // prettier-ignore
        );
        const key = provider.api_key_env;
        if (
          key &&
          provider.usable === false &&
          provider.reason?.includes(key)
        ) {
          item.append(keyStatusLine(key, false)); // the usual reason: say how to set it
        }
        return item;
      })
    );
    if (!info.providers.length) {
      this.providers.append(
        el(
          'li',
          'nini-empty',
          this.editable
            ? __('No provider yet: pick a preset below.')
            : __('No provider yet.')
        )
      );
    }
    const rows = Object.entries(info.purposes).map(([purpose, route]) => {
      const row = el('tr');
      const chain = route.chain
        .map(candidate => `${candidate.provider}/${candidate.model}`)
        .join(' → ');
      row.append(
        el('td', undefined, purpose),
        el('td', undefined, chain || __('no usable model'))
      );
      return row;
    });
    this.purposes.replaceChildren(...rows);
  }

  private async save(): Promise<void> {
    const provider = this.provider();
    if (!this.showProblems(validateProvider(provider, true))) {
      return; // nothing is sent: an empty name would be PUT .../providers/
    }
    try {
      await this.api.saveProvider(provider);
      this.result.textContent = __('Saved %1 to settings.json.', provider.name);
      this.result.dataset.ok = 'true';
      await this.refresh();
    } catch (error) {
      this.say(error);
    }
  }

  private button(
    text: string,
    label: string,
    action: () => void
  ): HTMLButtonElement {
    const button = el('button', 'jp-Button jp-mod-minimal', text);
    button.setAttribute('aria-label', label);
    button.onclick = action;
    return button;
  }

  /** The form's provider (an unsaved one: the administrators'), or a configured one named only. */
  private async test(named?: ProviderInfo): Promise<void> {
    const provider = named ?? this.provider();
    if (
      named === undefined &&
      !this.showProblems(validateProvider(provider, false))
    ) {
      return;
    }
    this.result.textContent = __(
      'Testing %1…',
      provider.name || __('the provider')
    );
    delete this.result.dataset.ok;
    try {
      const outcome = await this.api.testProvider(provider);
      this.result.dataset.ok = String(outcome.ok);
      if (outcome.ok) {
        this.result.textContent = __(
          'OK: %1 answered in %2 ms',
          outcome.model ?? provider.model ?? '',
          outcome.latency_ms ?? '?'
        );
      } else {
        const parts = reasonParts(outcome.reason ?? __('no reason given'));
        if (parts.sentence === null) {
          this.result.textContent = __('Failed: %1', parts.detail);
        } else {
          showError(this.result, {
            ...parts,
            sentence: __('Failed: %1', parts.sentence)
          });
        }
      }
    } catch (error) {
      this.say(error);
    }
  }

  /** One tiny call per model the purposes would call first (as `nini models test`). */
  private async testEveryPurpose(): Promise<void> {
    this.testAll.disabled = true;
    this.tested.replaceChildren(el('li', undefined, __('Testing…')));
    try {
      const { results } = await this.api.testAllModels();
      this.tested.replaceChildren(
        ...results.map(result => {
          const line = el(
            'li',
            'nini-models-tested-line',
            `${result.ok ? __('OK') : __('Failed')}: ${result.target} · ${result.detail}`
          );
          line.dataset.ok = String(result.ok);
          return line;
        })
      );
      if (!results.length) {
        this.tested.replaceChildren(
          el('li', undefined, __('No model to test: add a provider.'))
        );
      }
    } catch (error) {
      this.say(error);
    } finally {
      this.testAll.disabled = false;
    }
  }

  private say(error: unknown): void {
    this.result.dataset.ok = 'false';
    showError(this.result, error);
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}

/** Whether key variable `name` is set on the server; when not, how to set it (the value stays the user's). */
export function keyStatusLine(name: string, set: boolean): HTMLElement {
  const line = el('div', 'nini-key-line');
  line.dataset.set = String(set);
  if (set) {
    line.textContent = __(
      '%1 is set on the server (its value is never shown here).',
      name
    );
    return line;
  }
  line.append(
    el(
      'span',
      undefined,
      __(
        '%1 is not set on the server. Set it where JupyterLab starts, then restart JupyterLab:',
        name
      )
    ),
    el('code', 'nini-key-command', `export ${name}=<your key>`),
    el('span', undefined, __('On Windows: %1 in a new terminal. On JupyterHub: ask your administrator to set it for your server.',
                              `setx ${name} <your key>`)) // prettier-ignore
  );
  return line;
}
