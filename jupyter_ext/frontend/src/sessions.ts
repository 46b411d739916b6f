/**
 * The chat's session list: a button naming the open session, which opens a panel to search past
 * sessions by title or by what was said (as you type: the titles at once, then the server's search
 * of the conversations, `GET /nini/api/sessions?q=`), open one, rename it (its title is stored with
 * the session) or delete it (after a confirmation dialog; the server refuses a running session).
 *
 * Keyboard: ↓ from the search goes to the list, ↑ ↓ move in it, Esc closes the panel; F2 renames
 * the focused session and Delete deletes it.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import {
  caretDownIcon,
  deleteIcon,
  editIcon,
  historyIcon
} from '@jupyterlab/ui-components';

import type { NiniApi, SessionInfo } from './api';
import { iconButton } from './codeblocks';
import { el } from './dom';
import { timeTexts } from './footer';
import { __ } from './i18n';

const SEARCH_DELAY_MS = 200; // the server is asked once typing pauses this long

export class SessionList {
  readonly node = el('div', 'nini-session-picker');
  private readonly toggle = el(
    'button',
    'jp-Button jp-mod-styled nini-sessions'
  );
  private readonly label = el('span', 'nini-sessions-title');
  private readonly panel = el('div', 'nini-session-panel');
  private readonly search = el('input', 'jp-mod-styled nini-session-search');
  private readonly list = el('ul', 'nini-session-list');
  private readonly status = el('div', 'nini-session-status');
  private sessions: SessionInfo[] = [];
  private current: string | null = null;
  private asked = 0; // the latest search sent, or typing since: an older answer arriving late is dropped
  private timer = 0;
  private confirming = false; // a dialog is up: a click on it is not a click outside the panel

  constructor(
    private readonly api: NiniApi,
    private readonly open: (id: string | null) => void,
    private readonly say: (error: unknown) => void
  ) {
    this.toggle.type = 'button';
    this.toggle.setAttribute('aria-haspopup', 'dialog');
    this.toggle.setAttribute('aria-expanded', 'false');
    this.toggle.append(
      historyIcon.element({ tag: 'span', className: 'nini-sessions-icon' }),
      this.label,
      caretDownIcon.element({ tag: 'span', className: 'nini-sessions-caret' })
    );
    this.toggle.onclick = () =>
      this.panel.hidden ? void this.show() : this.hide();
    this.panel.hidden = true;
    this.panel.setAttribute('role', 'dialog');
    this.panel.setAttribute('aria-label', __('Sessions'));
    this.search.type = 'search';
    this.search.placeholder = __('Search titles and conversations');
    this.search.setAttribute('aria-label', __('Search sessions'));
    this.search.oninput = () => this.searchSoon();
    this.list.setAttribute('aria-label', __('Sessions'));
    this.status.setAttribute('role', 'status');
    this.panel.append(this.search, this.list, this.status);
    this.panel.addEventListener('keydown', event => this.key(event));
    this.node.append(this.toggle, this.panel);
    document.addEventListener('mousedown', event => {
      if (
        !this.panel.hidden &&
        !this.confirming &&
        !this.node.contains(event.target as Node)
      ) {
        this.hide(false);
      }
    });
    this.select(null);
  }

  /** Read the list again (a session was made or changed elsewhere), keeping the search. */
  async refresh(): Promise<SessionInfo[]> {
    const asked = ++this.asked;
    const query = this.search.value.trim();
    try {
      const sessions = await this.api.listSessions(query);
      if (asked === this.asked) {
        this.sessions = sessions;
        this.render(query);
        this.select(this.current);
      }
      return sessions;
    } catch (error) {
      this.say(error);
      return [];
    }
  }

  /** Show `id` as the open session (null: a new chat). */
  select(id: string | null): void {
    this.current = id;
    const session = this.sessions.find(one => one.id === id);
    const name = id === null ? __('Past sessions') : session?.title || id;
    this.label.textContent = name;
    this.toggle.title = __('Sessions: %1', name);
    this.toggle.setAttribute('aria-label', __('Sessions: %1', name));
    this.toggle.dataset.session = id ?? '';
    for (const item of this.list.querySelectorAll<HTMLElement>(
      '.nini-session-item'
    )) {
      current(
        item.querySelector<HTMLElement>('.nini-session-open'),
        item.dataset.id === id
      );
    }
  }

  private async show(): Promise<void> {
    this.panel.hidden = false;
    this.toggle.setAttribute('aria-expanded', 'true');
    this.search.focus();
    await this.refresh();
  }

  private hide(focusToggle = true): void {
    this.panel.hidden = true;
    this.toggle.setAttribute('aria-expanded', 'false');
    if (focusToggle) {
      this.toggle.focus();
    }
  }

  /** Titles filter at once; the server's search (the conversations too) follows when typing pauses. */
  private searchSoon(): void {
    this.asked++; // what was typed supersedes a search still on its way (show()'s, of the old text)
    const query = this.search.value.trim().toLowerCase();
    this.render(
      query,
      this.sessions.filter(session =>
        (session.title ?? session.id).toLowerCase().includes(query)
      )
    );
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.refresh(), SEARCH_DELAY_MS);
  }

  private render(query: string, sessions: SessionInfo[] = this.sessions): void {
    this.list.replaceChildren(...sessions.map(session => this.item(session)));
    this.list.dataset.query = query;
    this.showStatus(query, sessions.length);
  }

  private showStatus(query: string, count: number): void {
    this.status.textContent = count
      ? ''
      : query
        ? __('No session matches “%1”', query)
        : __('No sessions yet');
  }

  private item(session: SessionInfo): HTMLElement {
    const title = session.title || session.id;
    const item = el('li', 'nini-session-item');
    item.dataset.id = session.id;
    const openButton = el('button', 'nini-session-open');
    openButton.type = 'button';
    current(openButton, session.id === this.current);
    const when = timeTexts(session.updated_at);
    const time = el('span', 'nini-session-time', when?.short ?? '');
    time.title = when?.full ?? '';
    openButton.append(el('span', 'nini-session-title', title), time);
    openButton.onclick = () => {
      this.hide(false);
      this.open(session.id);
    };
    item.append(
      openButton,
      iconButton(editIcon, 'nini-session-rename', __('Rename %1', title), () =>
        this.rename(item, session)
      ),
      iconButton(
        deleteIcon,
        'nini-session-delete',
        __('Delete %1', title),
        () => void this.remove(session)
      )
    );
    return item;
  }

  /** The title becomes a text box: Enter (or leaving it) saves, Esc leaves the title as it was. */
  private rename(item: HTMLElement, session: SessionInfo): void {
    const before = session.title || session.id;
    const box = el('input', 'jp-mod-styled nini-session-title-input');
    box.value = before;
    box.setAttribute('aria-label', __('New title of %1', before));
    const openButton = item.querySelector('.nini-session-open')!;
    openButton.replaceWith(box);
    box.focus();
    box.select();
    let done = false;
    const finish = async (save: boolean) => {
      if (done) {
        return;
      }
      done = true;
      const title = box.value.trim();
      if (save && title && title !== before) {
        try {
          Object.assign(
            session,
            await this.api.renameSession(session.id, title)
          );
        } catch (error) {
          this.say(error);
        }
      }
      const fresh = this.item(session);
      item.replaceWith(fresh);
      this.select(this.current);
      fresh.querySelector<HTMLElement>('.nini-session-rename')?.focus();
    };
    box.onkeydown = event => {
      if (event.key === 'Enter' || event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation(); // Esc ends the renaming, not the panel
        void finish(event.key === 'Enter');
      }
    };
    box.onblur = () => void finish(true);
  }

  /** Delete after the user confirms; the server refuses a session whose turn is running (CONFLICT). */
  private async remove(session: SessionInfo): Promise<void> {
    const title = session.title || session.id;
    this.confirming = true;
    let answer;
    try {
      answer = await showDialog({
        title: __('Delete this session?'),
        body: __(
          '“%1”, its steps, charts and files are deleted for good.',
          title
        ),
        buttons: [
          Dialog.cancelButton({ label: __('Cancel') }),
          Dialog.warnButton({ label: __('Delete') })
        ],
        defaultButton: 0 // Enter keeps the session: deleting is the deliberate choice
      });
    } finally {
      this.confirming = false;
    }
    if (!answer.button.accept) {
      this.list
        .querySelector<HTMLElement>(
          `[data-id="${CSS.escape(session.id)}"] .nini-session-delete`
        )
        ?.focus();
      return;
    }
    try {
      await this.api.deleteSession(session.id);
    } catch (error) {
      this.say(error);
      return;
    }
    const shown = [
      ...this.list.querySelectorAll<HTMLElement>('.nini-session-item')
    ];
    const place = shown.findIndex(node => node.dataset.id === session.id);
    this.sessions = this.sessions.filter(one => one !== session);
    shown[place]?.remove();
    this.showStatus(this.search.value.trim(), shown.length - 1);
    if (session.id === this.current) {
      this.open(null);
    }
    const buttons = [
      ...this.list.querySelectorAll<HTMLElement>('.nini-session-open')
    ];
    (buttons[Math.min(place, buttons.length - 1)] ?? this.search).focus();
  }

  private key(event: KeyboardEvent): void {
    const target = event.target as HTMLElement;
    const opens = [
      ...this.list.querySelectorAll<HTMLElement>('.nini-session-open')
    ];
    const at = opens.indexOf(target);
    const item = target.closest<HTMLElement>('.nini-session-item');
    if (event.key === 'Escape') {
      this.hide();
    } else if (
      event.key === 'ArrowDown' &&
      (target === this.search || at >= 0)
    ) {
      opens[Math.min(at + 1, opens.length - 1)]?.focus();
    } else if (event.key === 'ArrowUp' && at >= 0) {
      (at === 0 ? this.search : opens[at - 1]).focus();
    } else if (event.key === 'F2' && at >= 0 && item) {
      item.querySelector<HTMLElement>('.nini-session-rename')?.click();
    } else if (event.key === 'Delete' && at >= 0 && item) {
      item.querySelector<HTMLElement>('.nini-session-delete')?.click();
    } else {
      return;
    }
    event.preventDefault();
  }
}

/** Mark the open session's entry for assistive technology (`aria-current="true"`) and the eye. */
function current(node: HTMLElement | null, yes: boolean): void {
  if (yes) {
    node?.setAttribute('aria-current', 'true');
  } else {
    node?.removeAttribute('aria-current');
  }
}
