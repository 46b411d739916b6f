/**
 * Cells the agent proposes, shown where they would go: a pending cell in the active notebook
 * (the source, or a red/green diff against the cell it replaces) with Accept, Accept and run and
 * Reject, and a card in the chat with the proposal's status.
 *
 * A pending cell is a plain element, not a notebook cell: nothing touches the notebook's model
 * until the user clicks Accept. It is appended as the last child of the cell it follows (or
 * replaces), so it moves with that cell when the user edits the notebook, and the cell's own
 * layout, which inserts its children by index, is not disturbed; a proposal for the top of the
 * notebook goes just before the list of cells.
 */
import type { ICellModel } from '@jupyterlab/cells';
import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';

import { putCell } from './cells';
import { diffLines } from './diff';
import type { Proposal, ProposalItem } from './model';
import { el } from './dom';
import { __, N_ } from './i18n';

export type Decision = 'accept' | 'reject';
export type DecideProposal = (
  proposal: Proposal,
  decision: Decision,
  run: boolean
) => void;

const LANGUAGE: Record<string, string> = {
  python: 'Python',
  r: 'R',
  markdown: 'Markdown'
};
/** Shown through `__(status)`. */
const STATUS: Record<Proposal['status'], string> = {
  pending: N_('Pending: your choice'),
  accepted: N_('Accepted'),
  rejected: N_('Rejected')
};

function title(proposal: Proposal): string {
  const kind =
    LANGUAGE[proposal.language] ??
    (proposal.cell_type === 'markdown' ? 'Markdown' : __('code'));
  return proposal.replaces === null
    ? __('Proposed %1 cell at position %2', kind, proposal.position)
    : __('Proposed change to cell %1 (%2)', proposal.replaces, kind);
}

/** The proposal's content: its diff against the replaced cell when there is one, else its source. */
export function proposalBody(proposal: Proposal): HTMLElement {
  const lines = proposal.replaces !== null ? diffLines(proposal.diff) : [];
  if (!lines.length) {
    return el('pre', 'nini-proposal-source', proposal.source);
  }
  const pre = el('pre', 'nini-proposal-diff');
  pre.append(
    ...lines.map(line => {
      const node = el(
        'div',
        `nini-diff-line nini-diff-${line.kind}`,
        line.text || ' '
      );
      node.dataset.kind = line.kind;
      return node;
    })
  );
  return pre;
}

function buttons(proposal: Proposal, decide: DecideProposal): HTMLElement {
  const box = el('div', 'nini-proposal-buttons');
  const accept = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-proposal-accept',
    __('Accept')
  );
  const run = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-accept nini-proposal-run',
    __('Accept and run')
  );
  const reject = el(
    'button',
    'jp-Button jp-mod-styled jp-mod-reject nini-proposal-reject',
    __('Reject')
  );
  accept.setAttribute(
    'aria-label',
    __('Accept: insert this cell into the notebook')
  );
  run.setAttribute('aria-label', __('Accept and run this cell'));
  reject.setAttribute('aria-label', __('Reject this proposal'));
  const click = (decision: Decision, andRun: boolean) => () => {
    box
      .querySelectorAll('button')
      .forEach(button => ((button as HTMLButtonElement).disabled = true));
    decide(proposal, decision, andRun);
  };
  accept.onclick = click('accept', false);
  run.onclick = click('accept', true);
  reject.onclick = click('reject', false);
  box.append(accept, run, reject);
  return box;
}

function statusText(proposal: Proposal): string {
  return proposal.status === 'accepted' && proposal.ran
    ? __('Accepted and run')
    : __(STATUS[proposal.status]);
}

/** The chat's card of a proposal: what it is, its content and its status (buttons while pending). */
export function renderProposalCard(
  item: ProposalItem,
  existing: HTMLElement | undefined,
  decide: DecideProposal
): HTMLElement {
  const proposal = item.proposal;
  const node = existing ?? el('div', 'nini-proposal');
  if (
    node.dataset.status === proposal.status &&
    node.dataset.rendered === proposal.source
  ) {
    return node;
  }
  node.dataset.id = proposal.proposal_id;
  node.dataset.status = proposal.status;
  node.dataset.rendered = proposal.source;
  const details = el('details', 'nini-proposal-details');
  details.append(
    el('summary', 'nini-proposal-title', title(proposal)),
    proposalBody(proposal)
  );
  const status = el('div', 'nini-proposal-status', statusText(proposal));
  node.replaceChildren(details, status);
  if (proposal.status === 'pending') {
    node.append(buttons(proposal, decide));
  }
  return node;
}

interface Shown {
  panel: NotebookPanel;
  node: HTMLElement;
  anchor: ICellModel | null; // the cell it follows (or replaces); null: the top of the notebook
}

/** The pending cells in notebooks, one per pending proposal of the open session. */
export class PendingCells {
  private shown = new Map<string, Shown>();
  private proposals = new Map<string, Proposal>();

  constructor(
    private readonly notebooks: INotebookTracker | null,
    private readonly decide: DecideProposal
  ) {
    notebooks?.currentChanged.connect(() => this.showWaiting());
  }

  /** Show a pending proposal in the active notebook, or take a decided one away. */
  sync(proposal: Proposal): void {
    this.proposals.set(proposal.proposal_id, proposal);
    if (proposal.status !== 'pending') {
      this.remove(proposal.proposal_id);
      return;
    }
    const panel = this.notebooks?.currentWidget ?? null;
    const shown = this.shown.get(proposal.proposal_id);
    if (shown === undefined || !shown.node.isConnected) {
      this.remove(proposal.proposal_id);
      if (panel !== null && panel.content.model !== null) {
        this.show(panel, proposal);
      }
    }
  }

  /** Take every pending cell away (another session was opened). */
  clear(): void {
    for (const id of [...this.shown.keys()]) {
      this.remove(id);
    }
    this.proposals.clear();
  }

  remove(id: string): void {
    this.shown.get(id)?.node.remove();
    this.shown.delete(id);
  }

  /** The notebook a decision on `id` applies to: where it is shown, else the active one. */
  panelOf(id: string): NotebookPanel | null {
    return this.shown.get(id)?.panel ?? this.notebooks?.currentWidget ?? null;
  }

  /**
   * Put an accepted proposal into the notebook's model (insert it, or replace the cell's source)
   * and run it when asked; the index of the cell it became.
   */
  async accept(proposal: Proposal, run: boolean): Promise<number> {
    const panel = this.panelOf(proposal.proposal_id);
    const notebook = panel?.content;
    const model = notebook?.model;
    if (!panel || !notebook || !model) {
      throw new Error(__('open the notebook to accept this proposal'));
    }
    const index = putCell(
      panel,
      this.targetIndex(proposal, panel),
      proposal,
      proposal.replaces !== null
    );
    this.remove(proposal.proposal_id);
    if (run) {
      await NotebookActions.run(notebook, panel.sessionContext);
    }
    return index;
  }

  /** Where the proposal goes now: after (or at) its anchor cell, wherever that cell moved. */
  private targetIndex(proposal: Proposal, panel: NotebookPanel): number {
    const cells = panel.content.widgets;
    const shown = this.shown.get(proposal.proposal_id);
    const anchor =
      shown?.panel === panel ? shown.anchor : this.anchorOf(proposal, panel);
    const at =
      anchor === null ? -1 : cells.findIndex(cell => cell.model === anchor);
    if (proposal.replaces !== null) {
      return at >= 0 ? at : Math.min(proposal.replaces, cells.length);
    }
    return anchor === null
      ? 0
      : at >= 0
        ? at + 1
        : Math.min(proposal.position, cells.length);
  }

  private anchorOf(
    proposal: Proposal,
    panel: NotebookPanel
  ): ICellModel | null {
    const cells = panel.content.widgets;
    if (proposal.replaces !== null && proposal.replaces < cells.length) {
      return cells[proposal.replaces].model;
    }
    const before = Math.min(proposal.position, cells.length) - 1;
    return before >= 0 ? cells[before].model : null;
  }

  private show(panel: NotebookPanel, proposal: Proposal): void {
    const anchor = this.anchorOf(proposal, panel);
    const node = el('div', 'nini-pending-cell');
    node.dataset.id = proposal.proposal_id;
    node.dataset.cellType = proposal.cell_type;
    node.dataset.replaces = String(
      proposal.replaces !== null && anchor !== null
    );
    node.setAttribute('role', 'group');
    node.setAttribute('aria-label', title(proposal));
    // the notebook would take these as clicks on the cell (select it, enter edit mode)
    for (const type of ['mousedown', 'dblclick']) {
      node.addEventListener(type, event => event.stopPropagation());
    }
    node.append(
      el('div', 'nini-pending-title', `nini · ${title(proposal)}`),
      proposalBody(proposal),
      buttons(proposal, this.decide)
    );
    const cells = panel.content.widgets;
    const host =
      anchor === null ? null : cells.find(cell => cell.model === anchor);
    if (host) {
      host.node.append(node);
    } else {
      const viewport = panel.content.viewportNode;
      viewport.parentElement?.insertBefore(node, viewport);
    }
    this.shown.set(proposal.proposal_id, { panel, node, anchor });
  }

  private showWaiting(): void {
    for (const proposal of this.proposals.values()) {
      if (
        proposal.status === 'pending' &&
        !this.shown.get(proposal.proposal_id)?.node.isConnected
      ) {
        this.sync(proposal);
      }
    }
  }
}
