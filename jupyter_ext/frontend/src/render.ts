/**
 * DOM for the chat's items: one element per item, updated in place when the item changes.
 *
 * Plain DOM, no framework: a busy agent sends thousands of events and each must cost little. Code
 * and Markdown go through JupyterLab's rendermime (sanitized, highlighted); code only when its
 * step is opened, so a long history stays cheap to show.
 */
import type { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';

import { renderApproval } from './approval';
import { chartFigure } from './charts';
import { addCodeActions, codeActions } from './codeblocks';
import { el } from './dom';
import { renderRunFooter, stampTime } from './footer';
import { showError } from './errors';
import { __, N_ } from './i18n';
import { renderError, renderOutputs } from './outputs';
import { strictRendermime } from './sanitize';
import { whereBadge } from './where';
import type { ApprovalDecision } from './api';
import type { AssistantItem, ChatItem, EarlierItem, StepItem } from './model';
import { DecideProposal, renderProposalCard } from './proposals';

export { el };

export interface RenderContext {
  rendermime: IRenderMimeRegistry;
  artifactUrl: (path: string) => string;
  onApproval?: (approvalId: string, decision: ApprovalDecision) => void;
  onProposal?: DecideProposal;
  feedback?: (turnId: string) => HTMLElement; // thumbs under a finished answer
  notebooks?: INotebookTracker | null; // where Insert below, Replace cell and Insert chart act
  wholeCode?: (toolCallId: string) => Promise<string | null>; // a long step's code, from its record
}

const STATUS_TEXT: Record<string, string> = {
  running: N_('running'),
  succeeded: N_('done'),
  failed: N_('failed'),
  stopped: N_('stopped')
};
const IMAGE = /\.(png|svg|jpe?g|gif)$/i;

/** Markdown through JupyterLab's renderer, untrusted and with the strict sanitizer (./sanitize):
 * the text comes from a model. Every model text the sidebar shows goes through here or textContent. */
export async function renderMarkdown(
  rendermime: IRenderMimeRegistry,
  host: HTMLElement,
  text: string
): Promise<void> {
  const renderer = strictRendermime(rendermime).createRenderer('text/markdown');
  await renderer.renderModel(
    new MimeModel({ data: { 'text/markdown': text }, trusted: false })
  );
  host.replaceChildren(renderer.node);
}

/** A step's code to show: the event's when it is whole, else read from the step's record (the event of
 * a long code carries its start and `code_chars`); the start, said to be one, if that fails. */
async function stepCode(
  step: StepItem,
  context: RenderContext
): Promise<string> {
  const start = step.code ?? '';
  if (step.codeChars === null || step.codeChars <= start.length) {
    return start;
  }
  const whole = context.wholeCode
    ? await context.wholeCode(step.id).catch(() => null)
    : null;
  return (
    whole ??
    `${start}\n# … ${__('(the first %1 of %2 characters)', start.length, step.codeChars)}`
  );
}

function fenced(code: string, language: string): string {
  const fence = code.includes('```') ? '~~~~' : '```';
  return `${fence}${language}\n${code}\n${fence}`;
}

/** Create the element of `item`, or bring the existing one up to date. */
export function renderItem(
  item: ChatItem,
  existing: HTMLElement | undefined,
  context: RenderContext
): HTMLElement {
  switch (item.kind) {
    case 'user': {
      const node = existing ?? el('div', 'nini-user');
      node.textContent = item.text;
      stampTime(node, item.ts);
      return node;
    }
    case 'assistant':
      return renderAssistant(item, existing, context);
    case 'step':
      return renderStep(item, existing, context);
    case 'note': {
      const node = existing ?? el('div', 'nini-note');
      node.setAttribute('role', 'note');
      node.textContent = item.text;
      return node;
    }
    case 'error': {
      const node = existing ?? el('div', 'nini-error');
      node.setAttribute('role', 'alert');
      showError(node, item); // its plain sentence first (errors.ts), then the code and the server's words
      return node;
    }
    case 'end': {
      const node = existing ?? el('div', 'nini-end');
      const text =
        node.querySelector('.nini-end-text') ??
        node.appendChild(el('span', 'nini-end-text'));
      node.dataset.endedBy = item.endedBy;
      text.textContent = item.completedNormally
        ? ''
        : item.endedBy === 'canceled'
          ? __('Stopped: the run was cancelled.')
          : __('The run ended unfinished (%1).', item.endedBy);
      const judged =
        item.completedNormally &&
        item.turnId !== null &&
        context.feedback !== undefined;
      if (judged && !node.querySelector('.nini-feedback')) {
        node.append(context.feedback!(item.turnId!));
      }
      renderRunFooter(node, item.took); // its duration, steps, tokens and cost
      node.hidden = item.completedNormally && !judged && item.took === null;
      return node;
    }
    case 'earlier':
      return renderEarlier(item, existing);
    case 'proposal':
      return renderProposalCard(item, existing, (proposal, decision, run) =>
        context.onProposal?.(proposal, decision, run)
      );
    case 'approval':
      return renderApproval(
        item,
        existing,
        (id, decision) => context.onApproval?.(id, decision),
        (host, code, language) =>
          void renderMarkdown(context.rendermime, host, fenced(code, language))
      );
  }
}

/** The collapsed "Earlier in this session" note: its summary line says how many turns were folded,
 * its body is the summary as plain text (textContent: the narrative is the model's, the ledger
 * quotes the user's requests, so either may hold markup). Closed when made; a later summary
 * replaces the text and leaves it as the user left it. */
function renderEarlier(
  item: EarlierItem,
  existing: HTMLElement | undefined
): HTMLElement {
  const node = existing ?? el('details', 'nini-earlier');
  if (existing === undefined) {
    const summary = el('summary', 'nini-earlier-summary');
    summary.title = __(
      'What the model was given of the turns that no longer fit its context'
    );
    node.append(summary, el('div', 'nini-earlier-text'));
  }
  const turns =
    item.summarizedTurns === 1
      ? __(' (1 turn summarized)')
      : __(' (%1 turns summarized)', item.summarizedTurns);
  node.querySelector('.nini-earlier-summary')!.textContent =
    __('Earlier in this session') + turns;
  node.querySelector('.nini-earlier-text')!.textContent = item.text;
  node.dataset.turns = String(item.summarizedTurns);
  return node;
}

function renderAssistant(
  item: AssistantItem,
  existing: HTMLElement | undefined,
  context: RenderContext
): HTMLElement {
  const node = existing ?? el('div', 'nini-assistant');
  stampTime(node, item.ts);
  node.classList.toggle('nini-mod-streaming', item.streaming);
  if (item.streaming) {
    node.textContent = item.text; // plain while it streams; Markdown once whole
  } else if (node.dataset.rendered !== item.text) {
    node.dataset.rendered = item.text;
    void renderMarkdown(context.rendermime, node, item.text).then(() =>
      addCodeActions(node, context.notebooks)
    );
  }
  return node;
}

function renderStep(
  step: StepItem,
  existing: HTMLElement | undefined,
  context: RenderContext
): HTMLElement {
  const node = existing ?? buildStep(step, context);
  node.dataset.status = step.status;
  const parts = stepParts(node);
  const status = __(STATUS_TEXT[step.status] ?? step.status);
  parts.status.textContent = status;
  parts.status.setAttribute('aria-label', __('status: %1', status));
  parts.label.textContent = step.label;
  parts.duration.textContent =
    step.durationMs === null
      ? ''
      : `${(step.durationMs / 1000).toFixed(step.durationMs < 10_000 ? 2 : 1)} s`;
  if (step.language) {
    parts.language.textContent = step.language === 'r' ? 'R' : 'Python';
    parts.language.dataset.language = step.language;
    parts.language.hidden = false;
  }
  const where = whereBadge(step.language, step.isolation);
  parts.where.hidden = where === null;
  if (where !== null) {
    parts.where.textContent = where.text;
    parts.where.title = where.title;
    parts.where.dataset.where = where.where;
  }
  renderOutputs(step, parts.output, context.rendermime);
  renderError(step, parts.error);
  parts.summary.hidden = step.summary === null;
  parts.summary.textContent = step.summary === null ? '' : `↳ ${step.summary}`;
  const charts = step.artifacts.filter(path => IMAGE.test(path));
  const shown = charts.filter(path => path.endsWith('.png')).length
    ? charts.filter(path => path.endsWith('.png'))
    : charts;
  if (parts.charts.childElementCount !== shown.length) {
    const svg = (path: string) =>
      charts.find(other => other === path.replace(/\.png$/i, '.svg')) ?? path;
    parts.charts.replaceChildren(
      ...shown.map(path =>
        chartFigure(
          context.artifactUrl(path),
          path,
          context.notebooks,
          context.artifactUrl(svg(path))
        )
      )
    );
  }
  return node;
}

interface StepParts {
  status: HTMLElement;
  language: HTMLElement;
  where: HTMLElement;
  label: HTMLElement;
  duration: HTMLElement;
  output: HTMLElement;
  error: HTMLElement;
  summary: HTMLElement;
  charts: HTMLElement;
}

const PARTS = new WeakMap<HTMLElement, StepParts>(); // a step's parts, found once when it is built

function stepParts(node: HTMLElement): StepParts {
  return PARTS.get(node)!;
}

function buildStep(step: StepItem, context: RenderContext): HTMLElement {
  const node = el('div', 'nini-step');
  node.dataset.id = step.id;
  node.dataset.name = step.name;
  const details = el('details');
  const summary = el('summary');
  const parts: StepParts = {
    status: el('span', 'nini-step-status'),
    language: Object.assign(el('span', 'nini-step-language'), { hidden: true }),
    where: Object.assign(el('span', 'nini-step-where'), { hidden: true }),
    label: el('span', 'nini-step-label'),
    duration: el('span', 'nini-step-duration'),
    output: Object.assign(el('div', 'nini-step-output'), { hidden: true }),
    error: el('div', 'nini-step-error'),
    summary: el('div', 'nini-step-summary'),
    charts: el('div', 'nini-step-charts')
  };
  PARTS.set(node, parts);
  summary.append(
    parts.status,
    el('span', 'nini-step-name', step.name),
    parts.language,
    parts.where,
    parts.label,
    parts.duration
  );
  const body = el('div', 'nini-step-body');
  const code = el('div', 'nini-step-code');
  let actions =
    step.code !== null ? codeActions(step.code, context.notebooks) : null;
  if (actions !== null) {
    body.append(actions);
  }
  body.append(code);
  details.append(summary, body);
  details.addEventListener('toggle', () => {
    if (details.open && step.code !== null && !code.dataset.rendered) {
      code.dataset.rendered = '1';
      void stepCode(step, context).then(text => {
        if (text !== step.code && actions !== null) {
          const whole = codeActions(text, context.notebooks); // Copy and Insert take the whole code
          actions.replaceWith(whole);
          actions = whole;
        }
        return renderMarkdown(
          context.rendermime,
          code,
          fenced(text, step.language ?? '')
        );
      });
    }
  });
  const children = el('div', 'nini-step-children');
  // what a user reads first: the error's line, then the results (the code stays folded)
  node.append(
    details,
    parts.error,
    parts.output,
    parts.summary,
    parts.charts,
    children
  );
  return node;
}
