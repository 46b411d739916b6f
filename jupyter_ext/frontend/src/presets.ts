/**
 * The Models form's data, testable without a DOM: provider presets (each fills kind, base URL, key
 * variable and a model to start from) and the checks a provider passes before it is saved or tested,
 * the same ones the server makes (nini.config.ProviderSettings, nini.agent.model_admin), said in the
 * form next to the field instead of as a refusal after a round trip.
 */
import type { ProviderInfo } from './api';
import { __, N_ } from './i18n';

/** nini's provider kinds (nini.config.ProviderSettings.kind) and how the form names them. */
export const KINDS: [string, string][] = [
  ['openai', N_('OpenAI-compatible')],
  ['anthropic', N_('Anthropic')],
  ['replay', N_('Replay (a recorded script)')]
];

export interface Preset {
  id: string;
  label: string;
  kind: string;
  base_url: string;
  api_key_env: string | null; // null: a local server that wants no key
  model: string; // '' where it is whichever model the user loaded
  modelHint: string;
}

/** The providers' documented endpoints. Kind `openai` is any OpenAI-compatible API; nini's `anthropic`
 * kind takes the base URL without `/v1` (the SDK adds `/v1/messages`). */
export const PRESETS: Preset[] = [
  { id: 'openai', label: 'OpenAI', kind: 'openai', base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY',
    model: 'gpt-4o-mini', modelHint: 'gpt-4o-mini' },
  { id: 'anthropic', label: 'Anthropic', kind: 'anthropic', base_url: 'https://api.anthropic.com',
    api_key_env: 'ANTHROPIC_API_KEY', model: 'claude-sonnet-4-0', modelHint: 'claude-sonnet-4-0' },
  { id: 'deepseek', label: 'DeepSeek', kind: 'openai', base_url: 'https://api.deepseek.com', api_key_env: 'DEEPSEEK_API_KEY',
    model: 'deepseek-chat', modelHint: 'deepseek-chat' },
  { id: 'dashscope', label: N_('Qwen (DashScope)'), kind: 'openai', base_url: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
    api_key_env: 'DASHSCOPE_API_KEY', model: 'qwen-plus', modelHint: 'qwen-plus' },
  { id: 'ollama', label: 'Ollama', kind: 'openai', base_url: 'http://localhost:11434/v1', api_key_env: null, model: '',
    modelHint: 'qwen2.5:7b' },
  { id: 'vllm', label: 'vLLM', kind: 'openai', base_url: 'http://localhost:8000/v1', api_key_env: null, model: '',
    modelHint: 'Qwen/Qwen2.5-7B-Instruct' },
  { id: 'lmstudio', label: 'LM Studio', kind: 'openai', base_url: 'http://localhost:1234/v1', api_key_env: null, model: '',
    modelHint: 'qwen2.5-7b-instruct' }
]; // prettier-ignore

/** A field's problem, as the form shows it next to that field. */
export type Problems = Partial<
  Record<
    | 'name'
    | 'kind'
    | 'base_url'
    | 'model'
    | 'api_key_env'
    | 'input_per_mtok'
    | 'output_per_mtok'
    | 'currency',
    string
  >
>;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const KEY_SHAPED =
  /^(?:bearer\s|(?:sk|pk|rk|gsk|hf|ghp|xai|sess)[-_][A-Za-z0-9])/i;

/**
 * Whether `text` reads as an environment variable's name rather than a key pasted in its place (as the
 * server's `_is_variable_name`): upper case names pass; a long run of letters and digits does not.
 */
export function isVariableName(text: string): boolean {
  if (!VARIABLE.test(text)) {
    return false;
  }
  if (text === text.toUpperCase()) {
    return true;
  }
  const digits = [...text].filter(c => c >= '0' && c <= '9').length;
  return !((text.length >= 20 && digits >= 4) || KEY_SHAPED.test(text));
}

/** Why a base URL is refused, or null: an http(s) address with a host, no credentials, no key in it. */
export function urlProblem(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return __('Enter a full address, like http://localhost:11434/v1');
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    !url.hostname
  ) {
    return __('The address must start with http:// or https://');
  }
  if (
    url.username ||
    url.password ||
    /[?&](?:api[-_]?key|key|token|access[-_]?token|secret)=/i.test(url.search)
  ) {
    return __(
      'The address must not carry a key: put the key in an environment variable'
    );
  }
  return null;
}

/**
 * The problems of `provider` before it is saved (`forSaving`: it needs a name, which goes into the URL)
 * or tested; an empty object when there are none.
 */
export function validateProvider(
  provider: ProviderInfo,
  forSaving: boolean
): Problems {
  const problems: Problems = {};
  if (forSaving && !provider.name) {
    problems.name = __('Give the provider a name, like ollama');
  } else if (provider.name && !NAME.test(provider.name)) {
    problems.name = __(
      'Use letters, digits, dots, dashes or underscores (at most 64), starting with a letter or digit'
    );
  }
  if (!KINDS.some(([kind]) => kind === provider.kind)) {
    problems.kind = __('Choose a kind');
  }
  if (provider.base_url) {
    const problem = urlProblem(provider.base_url);
    if (problem !== null) {
      problems.base_url = problem;
    }
  }
  if (!provider.model && provider.kind !== 'replay') {
    problems.model = __('Name the model to call, like %1', 'qwen2.5:7b');
  } else if (provider.model && KEY_SHAPED.test(provider.model)) {
    problems.model = __(
      'This looks like a key: a key goes into an environment variable, never into the form'
    );
  }
  if (provider.api_key_env && !isVariableName(provider.api_key_env)) {
    problems.api_key_env = __(
      'Enter the name of an environment variable (like DEEPSEEK_API_KEY), not the key itself'
    );
  }
  for (const field of ['input_per_mtok', 'output_per_mtok'] as const) {
    const price = provider[field];
    if (
      price !== undefined &&
      price !== null &&
      !(Number.isFinite(price) && price >= 0)
    ) {
      problems[field] = __('A price is a number of 0 or more, like %1', '0.27');
    }
  }
  if (
    provider.currency !== undefined &&
    provider.currency !== null &&
    !/^[A-Za-z]{1,8}$/.test(provider.currency)
  ) {
    problems.currency = __('A currency code, like USD or CNY');
  }
  return problems;
}
