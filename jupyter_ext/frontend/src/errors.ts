/**
 * Every error code a reply can carry, as one plain sentence that says what happened and what to do:
 * the codes of nini.errors.ErrorCode (a unit test reads nini/errors.py and checks each has its
 * sentence here) and the two the client makes itself (NETWORK, HTTP_<status>). The server's own
 * message stays beside it as the detail, so nothing it says is lost; the sentence leads, since a
 * code like `UPSTREAM_ERROR` tells a data scientist nothing about what to do next.
 */
import { __, N_ } from './i18n';

/** The sentence of each code, in English (marked for zh.ts; `__()` translates it where shown). */
export const ERROR_SENTENCES: Record<string, string> = {
  INVALID_ARGUMENT: N_(
    'Something in the request is not right: check what you entered and try again.'
  ),
  NOT_FOUND: N_(
    'That is not there any more (deleted, renamed or never made): refresh and pick it again.'
  ),
  CONFLICT: N_(
    'This clashes with something already going on: wait for the current run to end, then try again.'
  ),
  TOO_LARGE: N_(
    'That is larger than this server allows: use a smaller file or ask for less, or ask an administrator to raise the limit.'
  ),
  POLICY_VIOLATION: N_(
    'nini refused this to keep your data and the server safe: change what the details name, or ask an administrator.'
  ),
  TIMEOUT: N_(
    'This took too long and was stopped: try again, or split the work into smaller steps.'
  ),
  CANCELED: N_('This was stopped before it finished: ask again to go on.'),
  CODE_ERROR: N_(
    'The code itself failed: read its message, then fix the code or ask nini to fix it.'
  ),
  DB_ERROR: N_(
    "nini could not read or write its history: try again; if it keeps happening, check the server's disk and database."
  ),
  NO_SPACE: N_(
    "The server's disk is full: free some space (old sessions, datasets, reports) or ask an administrator, then try again."
  ),
  KERNEL_DIED: N_(
    'The Python kernel stopped, often for lack of memory: ask again to start a fresh one, on less data if it happens again.'
  ),
  WORKER_DIED: N_(
    'The R worker stopped, often for lack of memory: ask again to start a fresh one, on less data if it happens again.'
  ),
  R_UNAVAILABLE: N_(
    'R cannot run on this server: ask for Python instead, or ask an administrator to install R and rpy2.'
  ),
  NO_MODEL_AVAILABLE: N_(
    'No language model is ready to answer: add a provider, or fix the one you have, in the Models tab.'
  ),
  UPSTREAM_ERROR: N_(
    'The model provider failed or could not be reached: try again later, or test the provider in the Models tab.'
  ),
  SKILL_DEFINITION_UNAVAILABLE: N_(
    "A skill's instructions could not be read: open it in the Skills tab to fix it, or disable it."
  ),
  INTERNAL: N_(
    "Something went wrong inside nini: try again; if it keeps happening, report it with the server's log."
  ),
  NETWORK: N_(
    'The Jupyter server cannot be reached: check that it is still running and that you are online, then try again.'
  )
};
const HTTP_SENTENCE = N_(
  'The server answered with an unexpected error (HTTP %1): reload the page and try again.'
);

/** What a failure says: the sentence for its code (null when it has no code), the code and the server's words. */
export interface ErrorParts {
  sentence: string | null;
  code: string | null;
  detail: string;
}

/** The plain sentence of `code`, in the sidebar's language; null for a code nini does not know. */
export function errorSentence(code: string): string | null {
  if (code in ERROR_SENTENCES) {
    return __(ERROR_SENTENCES[code]);
  }
  const http = /^HTTP_(\d+)$/.exec(code);
  return http ? __(HTTP_SENTENCE, http[1]) : null;
}

/** Any failure (a NiniApiError, an `error` event's `{code, message}`, an Error, a string) as its parts. */
export function errorParts(error: unknown): ErrorParts {
  const found = error as { code?: unknown; message?: unknown } | null;
  const code = typeof found?.code === 'string' ? found.code : null;
  const detail =
    typeof found?.message === 'string' ? found.message : String(error);
  return { sentence: code === null ? null : errorSentence(code), code, detail };
}

/** A reason that starts with its code ("UPSTREAM_ERROR: 401 bad key", as a model test answers) as its parts. */
export function reasonParts(reason: string): ErrorParts {
  const found = /^([A-Z][A-Z_]+[A-Z0-9]): ([\s\S]*)$/.exec(reason);
  return found
    ? errorParts({ code: found[1], message: found[2] })
    : { sentence: null, code: null, detail: reason };
}

/** The failure as one line of text: the sentence, then the code and the server's words. */
export function errorText(error: unknown): string {
  const parts = errorParts(error);
  const technical =
    parts.code === null ? parts.detail : `${parts.code}: ${parts.detail}`;
  return parts.sentence === null
    ? technical
    : `${parts.sentence} (${technical})`;
}

/** Fill `node` with the failure: its sentence first, the code and the server's words after it, smaller. */
export function showError(
  node: HTMLElement,
  error: unknown | ErrorParts
): void {
  const parts = isParts(error) ? error : errorParts(error);
  const technical =
    parts.code === null ? parts.detail : `${parts.code}: ${parts.detail}`;
  node.replaceChildren();
  if (parts.sentence !== null) {
    const sentence = document.createElement('span');
    sentence.className = 'nini-error-sentence';
    sentence.textContent = parts.sentence;
    node.append(sentence, ' ');
  }
  const detail = document.createElement('span');
  detail.className =
    parts.sentence === null ? 'nini-error-text' : 'nini-error-detail';
  detail.textContent = parts.sentence === null ? technical : `(${technical})`;
  node.append(detail);
  if (parts.code !== null) {
    node.dataset.code = parts.code;
  }
}

function isParts(value: unknown): value is ErrorParts {
  return (
    typeof value === 'object' &&
    value !== null &&
    'sentence' in value &&
    'detail' in value
  );
}
