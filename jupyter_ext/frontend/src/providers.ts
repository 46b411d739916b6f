/**
 * The Models tab: the configured providers (usable or why not), the model serving each purpose,
 * a form to add or edit a provider (the API key stays in an environment variable: only its name
 * is saved), and "Test", which makes one tiny real call and shows OK or the reason.
 */
import { Widget } from '@lumino/widgets';

import { ModelsInfo, NiniApi, NiniApiError, ProviderInfo } from './api';
import { el } from './render';

const KINDS = ['openai', 'anthropic', 'replay'];
const FIELDS: [keyof ProviderInfo, string, string][] = [
  ['name', 'Name', 'local'],
  ['base_url', 'Base URL', 'http://localhost:11434/v1'],
  ['model', 'Model', 'qwen2.5:7b'],
  ['api_key_env', 'API key environment variable', 'DEEPSEEK_API_KEY']
];

export class ProvidersView extends Widget {
  private readonly providers = el('ul', 'nini-provider-list');
  private readonly purposes = el('table', 'nini-purposes');
  private readonly form = el('form', 'nini-provider-form');
  private readonly result = el('div', 'nini-provider-result');
  private readonly inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  private readonly testAll = el('button', 'jp-Button jp-mod-styled nini-models-test-all', 'Test every purpose');
  private readonly tested = el('ul', 'nini-models-tested');

  constructor(private readonly api: NiniApi) {
    super();
    this.addClass('nini-models');
    this.title.label = 'Models';
    this.buildForm();
    this.result.setAttribute('role', 'status');
    this.providers.setAttribute('aria-label', 'Providers');
    this.testAll.setAttribute('aria-label', 'Make one tiny call to the model each purpose would use first');
    this.testAll.onclick = () => void this.testEveryPurpose();
    this.tested.setAttribute('aria-label', 'Test results per model');
    this.node.append(el('h3', undefined, 'Providers'), this.providers, el('h3', undefined, 'Add or edit a provider'), this.form, this.result,
                     el('h3', undefined, 'Model per purpose'), this.purposes, this.testAll, this.tested);
  }

  private buildForm(): void {
    const kind = el('select');
    kind.name = 'kind';
    kind.setAttribute('aria-label', 'Provider kind');
    KINDS.forEach(value => kind.append(Object.assign(el('option', undefined, value), { value })));
    this.inputs.set('kind', kind);
    this.form.append(this.labelled('Kind', kind));
    for (const [field, label, placeholder] of FIELDS) {
      const input = el('input');
      input.name = field;
      input.placeholder = placeholder;
      input.setAttribute('aria-label', label);
      this.inputs.set(field, input);
      this.form.append(this.labelled(label, input));
    }
    const save = el('button', 'jp-Button jp-mod-accept nini-provider-save', 'Save');
    save.type = 'submit';
    save.setAttribute('aria-label', 'Save the provider to settings.json');
    const test = el('button', 'jp-Button jp-mod-styled nini-provider-test', 'Test');
    test.type = 'button';
    test.setAttribute('aria-label', 'Test the provider with one small call');
    test.onclick = () => void this.test();
    this.form.append(save, test);
    this.form.onsubmit = event => {
      event.preventDefault();
      void this.save();
    };
  }

  private labelled(text: string, input: HTMLElement): HTMLElement {
    const label = el('label', 'nini-field');
    label.append(el('span', undefined, text), input);
    return label;
  }

  private provider(): ProviderInfo {
    const value = (name: string) => this.inputs.get(name)!.value.trim();
    const provider: ProviderInfo = { name: value('name'), kind: value('kind') };
    for (const field of ['base_url', 'model', 'api_key_env'] as const) {
      if (value(field)) {
        provider[field] = value(field);
      }
    }
    return provider;
  }

  private edit(provider: ProviderInfo): void {
    for (const [name, input] of this.inputs) {
      input.value = String((provider as any)[name] ?? '');
    }
    this.result.textContent = '';
  }

  async refresh(): Promise<void> {
    try {
      this.draw(await this.api.models());
    } catch (error) {
      this.say(error);
    }
  }

  private draw(info: ModelsInfo): void {
    this.providers.replaceChildren(
      ...info.providers.map(provider => {
        const item = el('li', 'nini-provider');
        item.dataset.name = provider.name;
        item.dataset.usable = String(provider.usable !== false);
        const edit = el('button', 'jp-Button jp-mod-minimal', 'Edit');
        edit.setAttribute('aria-label', `Edit ${provider.name}`);
        edit.onclick = () => this.edit(provider);
        item.append(
          el('span', 'nini-provider-name', provider.name),
          el('span', 'nini-badge', provider.kind),
          el('span', 'nini-provider-model', provider.model ?? ''),
          el('span', 'nini-provider-state', provider.usable === false ? `not usable: ${provider.reason ?? ''}` : 'usable'),
          edit
        );
        return item;
      })
    );
    if (!info.providers.length) {
      this.providers.append(el('li', 'nini-empty', 'No provider yet: add one below.'));
    }
    const rows = Object.entries(info.purposes).map(([purpose, route]) => {
      const row = el('tr');
      const chain = route.chain.map(candidate => `${candidate.provider}/${candidate.model}`).join(' → ');
      row.append(el('td', undefined, purpose), el('td', undefined, chain || 'no usable model'));
      return row;
    });
    this.purposes.replaceChildren(...rows);
  }

  private async save(): Promise<void> {
    const provider = this.provider();
    try {
      await this.api.saveProvider(provider);
      this.result.textContent = `Saved ${provider.name} to settings.json.`;
      this.result.dataset.ok = 'true';
      await this.refresh();
    } catch (error) {
      this.say(error);
    }
  }

  private async test(): Promise<void> {
    const provider = this.provider();
    this.result.textContent = `Testing ${provider.name || 'the provider'}…`;
    delete this.result.dataset.ok;
    try {
      const outcome = await this.api.testProvider(provider);
      this.result.dataset.ok = String(outcome.ok);
      this.result.textContent = outcome.ok
        ? `OK: ${outcome.model ?? provider.model ?? ''} answered in ${outcome.latency_ms ?? '?'} ms`
        : `Failed: ${outcome.reason ?? 'no reason given'}`;
    } catch (error) {
      this.say(error);
    }
  }

  /** One tiny call per model the purposes would call first (as `nini models test`). */
  private async testEveryPurpose(): Promise<void> {
    this.testAll.disabled = true;
    this.tested.replaceChildren(el('li', undefined, 'Testing…'));
    try {
      const { results } = await this.api.testAllModels();
      this.tested.replaceChildren(
        ...results.map(result => {
          const line = el('li', 'nini-models-tested-line', `${result.ok ? 'OK' : 'Failed'}: ${result.target} · ${result.detail}`);
          line.dataset.ok = String(result.ok);
          return line;
        })
      );
      if (!results.length) {
        this.tested.replaceChildren(el('li', undefined, 'No model to test: add a provider.'));
      }
    } catch (error) {
      this.say(error);
    } finally {
      this.testAll.disabled = false;
    }
  }

  private say(error: unknown): void {
    this.result.dataset.ok = 'false';
    this.result.textContent = error instanceof NiniApiError ? `${error.code}: ${error.message}` : String(error);
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}
