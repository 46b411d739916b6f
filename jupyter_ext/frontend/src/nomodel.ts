/**
 * The Chat tab's card for a server where no model can answer: said when the chat opens, not only
 * after a question is refused, with why each configured provider cannot be used and a way to the
 * Models tab. It follows the Models tab (a saved provider hides it at once) and a refused ask.
 */
import type { ModelsInfo, NiniApi } from './api';
import { el } from './dom';
import { __ } from './i18n';

/** Whether a chat turn would find a model: the `chat` purpose has a usable candidate. */
export function chatModelUsable(info: ModelsInfo): boolean {
  return (info.purposes.chat?.chain.length ?? 0) > 0;
}

export class NoModelCard {
  readonly node = el('section', 'nini-no-model');
  private readonly reasons = el('ul', 'nini-no-model-reasons');
  private readonly advice = el('p', 'nini-no-model-advice');
  private readonly open = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-no-model-open'
  );

  /** `openModels` brings the Models tab to the front. */
  constructor(
    private readonly api: NiniApi,
    openModels: () => void
  ) {
    const heading = el(
      'h3',
      'nini-no-model-title',
      __('No model is ready yet')
    );
    heading.id = 'nini-no-model-title';
    this.node.setAttribute('aria-labelledby', heading.id);
    this.node.hidden = true;
    this.open.type = 'button';
    this.open.onclick = openModels;
    this.node.append(heading, this.advice, this.reasons, this.open);
  }

  get shown(): boolean {
    return !this.node.hidden;
  }

  /** Ask the server; the card shows when no model is usable. An error leaves it as it was. */
  async check(): Promise<void> {
    try {
      this.show(await this.api.models());
    } catch {
      // the server unreachable: the chat's own request errors say so
    }
  }

  /** Show or hide the card for what the server says of the models (`editable`: the caller may add one). */
  show(info: ModelsInfo & { editable?: boolean }): void {
    const usable = chatModelUsable(info);
    this.node.hidden = usable;
    this.node.dataset.state = usable
      ? 'usable'
      : info.providers.length
        ? 'unusable'
        : 'none';
    if (usable) {
      return;
    }
    const editable = info.editable !== false;
    this.advice.textContent = editable
      ? __(
          'nini needs a language model to answer. Add one in the Models tab: a local server (Ollama, vLLM, LM Studio) needs no key; a cloud provider reads its key from an environment variable.'
        )
      : __(
          'nini needs a language model to answer, and this server has none that works. Ask an administrator of this server to add one.'
        );
    this.reasons.replaceChildren(
      ...info.providers.map(provider =>
        el(
          'li',
          undefined,
          `${provider.name}: ${provider.reason ?? __('not usable')}`
        )
      )
    );
    this.reasons.hidden = info.providers.length === 0;
    this.open.textContent = editable
      ? __('Set up a model')
      : __('See the models');
  }
}
