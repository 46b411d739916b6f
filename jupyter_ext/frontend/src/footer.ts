/**
 * When and at what cost: the run footer under each finished turn (its duration, steps, tokens, how
 * full the model's context was and, where the provider's price is configured, its cost: the `done`
 * event's `duration_ms`, `steps`, `usage`, `context` and `cost`) and the time on each message (a
 * compact time shown, the full one on hover).
 *
 * The formatting is pure (tested without a browser); the two DOM functions only place its text.
 */
import { el } from './dom';
import { __, language } from './i18n';

/** What a turn took, as its `done` event says (null for a turn recorded before nini counted it). */
export interface RunTook {
  durationMs: number;
  steps: number;
  promptTokens: number;
  completionTokens: number;
  calls: number;
  unreported: number;
  cost: Record<string, number> | null;
  context: RunContext | null; // null for a turn recorded before nini reported it (or one that called no model)
}

/** How full the model's context was on the turn's last call (the `done` event's `context`): a long
 * session's turns fold into a summary, and this is where a user sees how close the next fold is. */
export interface RunContext {
  tokens: number; // the prompt as last sent: system prompt, session summary, messages
  window: number; // the chat model's context window (the budget when its provider declares none)
  percent: number; // tokens / window * 100, one decimal (the server's)
  budget: number; // agent.context_max_tokens
  turns: number; // turns sent whole
  summarizedTurns: number; // older turns folded into the session's summary
}

const SYMBOLS: Record<string, string> = {
  USD: '$',
  CNY: '¥',
  EUR: '€',
  GBP: '£',
  JPY: '¥'
};

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? value
    : 0;
}

/** A `done` event's `context` as a `RunContext`; null when absent or not one. */
export function contextOf(value: any): RunContext | null {
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof value.tokens !== 'number'
  ) {
    return null;
  }
  return {
    tokens: count(value.tokens),
    window: count(value.window),
    percent: count(value.percent),
    budget: count(value.budget),
    turns: count(value.turns),
    summarizedTurns: count(value.summarized_turns)
  };
}

/** The `done` event's `data` as a `RunTook`; null when it carries no duration (an older record). */
export function tookOf(data: any): RunTook | null {
  if (typeof data?.duration_ms !== 'number') {
    return null;
  }
  const usage = data.usage ?? {};
  const cost =
    data.cost && typeof data.cost === 'object'
      ? (data.cost as Record<string, number>)
      : null;
  return {
    durationMs: count(data.duration_ms),
    steps: count(data.steps),
    promptTokens: count(usage.prompt_tokens),
    completionTokens: count(usage.completion_tokens),
    calls: count(usage.calls),
    unreported: count(usage.unreported),
    cost,
    context: contextOf(data.context)
  };
}

/** `850 ms`, `4.2 s`, `1 min 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  if (ms < 60_000) {
    return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  }
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

/** `950`, `12.3k`, `1.2M`: a token count that fits a narrow footer (the exact one is in its tooltip). */
export function formatTokens(value: number): string {
  if (value < 1000) {
    return String(value);
  }
  if (value < 1_000_000) {
    return `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)}k`;
  }
  return `${(value / 1_000_000).toFixed(1)}M`;
}

/** `$0.0012`, `¥1.25`, `0.5 CHF`: two significant digits under one unit, cents above. */
export function formatCost(cost: Record<string, number>): string {
  return Object.entries(cost)
    .map(([currency, amount]) => {
      const number =
        amount === 0
          ? '0'
          : amount >= 1
            ? amount.toFixed(2)
            : String(Number(amount.toPrecision(2)));
      const symbol = SYMBOLS[currency.toUpperCase()];
      return symbol ? `${symbol}${number}` : `${number} ${currency}`;
    })
    .join(' + ');
}

/** The footer's parts, in order: duration, steps, tokens, context and cost (these two only when known). */
export function footerParts(
  took: RunTook
): { text: string; title: string; kind: string }[] {
  const exact = (value: number) =>
    value.toLocaleString(language() === 'zh' ? 'zh-CN' : 'en');
  const parts = [
    {
      kind: 'duration',
      text: formatDuration(took.durationMs),
      title: __('How long the turn took')
    },
    {
      kind: 'steps',
      text: took.steps === 1 ? __('1 step') : __('%1 steps', took.steps),
      title: __('Steps (tool calls) the turn ran')
    },
    {
      kind: 'tokens',
      text: __(
        '%1 + %2 tokens',
        formatTokens(took.promptTokens),
        formatTokens(took.completionTokens)
      ),
      title:
        __(
          '%1 prompt tokens and %2 completion tokens over %3 model calls',
          exact(took.promptTokens),
          exact(took.completionTokens),
          took.calls
        ) +
        (took.unreported
          ? ' ' + __('(%1 calls reported no usage)', took.unreported)
          : '')
    }
  ];
  const context = took.context;
  if (context !== null) {
    parts.push({
      kind: 'context',
      text: __(
        'context %1 (%2%)',
        formatTokens(context.tokens),
        context.percent
      ),
      title: __(
        '%1 tokens of a context window of %2; %3 turns sent whole, %4 earlier turns summarized',
        exact(context.tokens),
        exact(context.window),
        exact(context.turns),
        exact(context.summarizedTurns)
      )
    });
  }
  if (took.cost !== null) {
    parts.push({
      kind: 'cost',
      text: formatCost(took.cost),
      title: __("The cost at the provider's configured price")
    });
  }
  return parts;
}

/** Put the footer of a finished turn into `host` (its `.nini-end`), once. */
export function renderRunFooter(host: HTMLElement, took: RunTook | null): void {
  if (took === null || host.querySelector(':scope > .nini-run-footer')) {
    return;
  }
  const footer = el('div', 'nini-run-footer');
  footer.setAttribute('aria-label', __('What the turn took'));
  for (const part of footerParts(took)) {
    const node = el('span', 'nini-run-footer-part', part.text);
    node.dataset.kind = part.kind;
    node.title = part.title;
    footer.append(node);
  }
  host.prepend(footer);
}

/** `14:05` today, `11-24 14:05` on another day of this year, `2025-11-24 14:05` before; and the full
 * date and time, for the tooltip. Null for a missing or malformed time. */
export function timeTexts(
  ts: string | null | undefined,
  now: Date = new Date()
): { short: string; full: string } | null {
  const moment = ts ? new Date(ts) : null;
  if (moment === null || Number.isNaN(moment.getTime())) {
    return null;
  }
  const two = (n: number) => String(n).padStart(2, '0');
  const clock = `${two(moment.getHours())}:${two(moment.getMinutes())}`;
  const day = `${two(moment.getMonth() + 1)}-${two(moment.getDate())}`;
  const sameDay = moment.toDateString() === now.toDateString();
  const short = sameDay
    ? clock
    : moment.getFullYear() === now.getFullYear()
      ? `${day} ${clock}`
      : `${moment.getFullYear()}-${day} ${clock}`;
  const full = moment.toLocaleString(language() === 'zh' ? 'zh-CN' : 'en', {
    dateStyle: 'full',
    timeStyle: 'medium'
  });
  return { short, full };
}

/** Show when a message was sent: its compact time (a `data-time` the stylesheet places after the
 * text, so the message's own text stays as it was) and the full time on hover. */
export function stampTime(
  node: HTMLElement,
  ts: string | null | undefined
): void {
  const texts = timeTexts(ts);
  if (texts === null || node.dataset.time === texts.short) {
    return;
  }
  node.dataset.time = texts.short;
  node.title = texts.full;
}
