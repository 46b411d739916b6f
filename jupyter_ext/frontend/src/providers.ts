/**
 * The Models tab: the configured providers (usable or why not), the model serving each purpose,
 * a form to add or edit a provider (the API key stays in an environment variable: only its name
 * is saved), and "Test", which makes one tiny real call and shows OK or the reason.
 *
 * Providers are the server's: for a caller who may not change them (the server's GET says
 * `editable: false`, on a server that names its users) the tab is read-only: no form, no Edit,
 * and each provider's Test names it only, so the server calls it as configured.
 */
import { Widget } from '@lumino/widgets';

import { ModelsInfo, NiniApi, NiniApiError, ProviderInfo } from './api';
import { el } from './render';

const KINDS = ['openai', 'anthropic', 'replay'];
const READ_ONLY_NOTE = "These providers belong to this server: only its administrators (server.admins) can change them. You can test them.";
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
  private readonly editing = el('section', 'nini-provider-editing');
  private readonly readOnly = el('p', 'nini-models-read-only', READ_ONLY_NOTE);
  private editable = true;

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
    this.readOnly.hidden = true;
    this.editing.append(el('h3', undefined, 'Add or edit a provider'), this.form);
    this.node.append(el('h3', undefined, 'Providers'), this.readOnly, this.providers, this.editing, this.result,
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
          el('span', 'nini-provider-state', provider.usable === false ? `not usable: ${provider.reason ?? ''}` : 'usable'),
          this.editable ? this.button('Edit', `Edit ${provider.name}`, () => this.edit(provider))
            : this.button('Test', `Test ${provider.name} with one small call`, () => void this.test({ name: provider.name } as ProviderInfo))
        );
        return item;
      })
    );
    if (!info.providers.length) {
      this.providers.append(el('li', 'nini-empty', this.editable ? 'No provider yet: add one below.' : 'No provider yet.'));
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

  private button(text: string, label: string, action: () => void): HTMLButtonElement {
    const button = el('button', 'jp-Button jp-mod-minimal', text);
    button.setAttribute('aria-label', label);
    button.onclick = action;
    return button;
  }

  /** The form's provider (an unsaved one: the administrators'), or a configured one named only. */
  private async test(named?: ProviderInfo): Promise<void> {
    const provider = named ?? this.provider();
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
