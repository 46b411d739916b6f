/**
 * One language for the whole sidebar, gettext style as JupyterLab's own `trans.__()`: every string a user
 * reads is written in English in the code as `__('English text %1', value)`, and `zh.ts` holds its
 * Simplified Chinese form. The language is chosen once (`setLanguage`): `ui.language` when it is set to
 * `zh` or `en`, otherwise JupyterLab's language (ITranslator's `languageCode`), so the sidebar, the server's
 * refusals, previews, templates and reports all follow the same choice.
 */
import { ZH } from './zh';

export type Language = 'en' | 'zh';

let current: Language = 'en';

/** The language every `__()` call now answers in. */
export function language(): Language {
  return current;
}

/**
 * Choose the language: `setting` is `ui.language` (`auto`, `zh` or `en`), `labLanguage` JupyterLab's
 * language code (`en`, `zh-CN`, `zh_CN`, ...).
 */
export function setLanguage(
  setting: string | null | undefined,
  labLanguage: string | null | undefined
): Language {
  current =
    setting === 'zh' || setting === 'en'
      ? setting
      : /^zh/i.test(labLanguage ?? '')
        ? 'zh'
        : 'en';
  return current;
}

/**
 * Marks `text` as one of the sidebar's strings where it cannot be translated yet: a constant made when
 * its module loads, before the language is chosen. Where it is shown, `__(text)` translates it; the
 * completeness test looks for its zh.ts entry as it does for `__('...')` (gettext's `N_`).
 */
export function N_(text: string): string {
  return text;
}

/** `text` in the chosen language, with `%1`, `%2`... replaced by `args` (as JupyterLab's `trans.__`). */
export function __(text: string, ...args: unknown[]): string {
  const words = current === 'zh' ? (ZH[text] ?? text) : text;
  return args.length === 0
    ? words
    : words.replace(/%(\d+)/g, (all, n) =>
        Number(n) <= args.length ? String(args[Number(n) - 1]) : all
      );
}
