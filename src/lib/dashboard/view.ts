/**
 * What the person at the dashboard has chosen — which pod, which view, the
 * sort and the filter — and how keys change it: a pure reducer, so key
 * handling is tested without a terminal.
 */
import type { PodRow } from './store.js';

export const SORT_KEYS = ['name', 'status', 'restarts', 'age'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface ViewState {
  mode: 'main' | 'detail' | 'help';
  /** The selected pod, by `namespace/name` (stable while rows move). */
  selected: string | null;
  sort: SortKey;
  /** The applied filter ('' for none). */
  filter: string;
  /** Typing a filter: what is typed so far, null when not typing. */
  filterDraft: string | null;
  /** Detail view: which container's log is tailed (index into the pod's containers). */
  container: number;
  /** Detail view: tail the log (`l`). */
  follow: boolean;
}

export const INITIAL_VIEW: ViewState = {
  mode: 'main',
  selected: null,
  sort: 'name',
  filter: '',
  filterDraft: null,
  container: 0,
  follow: false,
};

/** The keys the reducer understands, as ink's useInput reports them. */
export interface KeyPress {
  input: string;
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  return?: boolean;
  escape?: boolean;
  backspace?: boolean;
  delete?: boolean;
  tab?: boolean;
  ctrl?: boolean;
}

/**
 * The key presses in one chunk of input as ink's useInput reports it. Text
 * pasted, or typed faster than the screen reads it, arrives as one chunk
 * ("jj", "crasher\r"): each character is its own key, a CR, LF or CR LF is
 * Enter, a tab is Tab, and other control characters are dropped. So a chunk
 * ending in a newline is the text followed by Enter, as when typed key by
 * key. A lone LF (Ctrl-J, which ink names "enter" but not "return") is
 * Enter too. A chunk that is one key or a named key (an arrow, Esc, Ctrl-X)
 * is passed on unchanged: ink has already split escape sequences apart.
 */
export function keyPresses(key: KeyPress & { meta?: boolean }): KeyPress[] {
  const { input } = key;
  const named = key.ctrl || key.meta || key.escape || key.return || key.tab || key.upArrow || key.downArrow || key.pageUp || key.pageDown || key.backspace || key.delete;
  if (named) return [key];
  if (input === '\n') return [{ input: '', return: true }];
  if ([...input].length <= 1) return [key];
  const out: KeyPress[] = [];
  for (let i = 0; i < input.length; ) {
    const ch = String.fromCodePoint(input.codePointAt(i) ?? 0);
    i += ch.length;
    if (ch === '\r' || ch === '\n') {
      if (ch === '\r' && input[i] === '\n') i++;
      out.push({ input: '', return: true });
    } else if (ch === '\t') out.push({ input: '', tab: true });
    else if (ch === '\x7f' || ch === '\b') out.push({ input: '', backspace: true });
    else if (ch.charCodeAt(0) >= 0x20) out.push({ input: ch });
  }
  return out;
}

/** The help screen's lines. */
export const KEY_HELP: readonly [string, string][] = [
  ['↑ ↓ / j k', 'select a pod'],
  ['PgUp PgDn', 'move a page'],
  ['Enter', 'details of the selected pod'],
  ['l', 'details: follow the container log (again: stop)'],
  ['Tab', 'details: next container'],
  ['Esc', 'back (and clear the filter)'],
  ['s', 'sort by name, status, restarts, age'],
  ['/', 'filter pods (Enter applies, Esc cancels)'],
  ['?', 'this help'],
  ['q Ctrl-C', 'quit'],
];

const STATUS_RANK = (status: string): number => {
  if (/BackOff|Err|Error|Failed|OOMKilled|Unknown/.test(status)) return 0;
  if (/Pending|Init|Creating|Terminating|NotReady/.test(status)) return 1;
  if (status === 'Running') return 3;
  return 2;
};

/** The pods the table shows, filtered and sorted. */
export function visiblePods(pods: readonly PodRow[], view: Pick<ViewState, 'sort' | 'filter'>): PodRow[] {
  const f = view.filter.toLowerCase();
  const out = f === '' ? [...pods] : pods.filter((p) => p.key.toLowerCase().includes(f) || p.status.toLowerCase().includes(f));
  const byName = (a: PodRow, b: PodRow) => a.key.localeCompare(b.key);
  switch (view.sort) {
    case 'name':
      return out.sort(byName);
    case 'status':
      return out.sort((a, b) => STATUS_RANK(a.status) - STATUS_RANK(b.status) || a.status.localeCompare(b.status) || byName(a, b));
    case 'restarts':
      return out.sort((a, b) => b.restarts - a.restarts || byName(a, b));
    case 'age':
      return out.sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0) || byName(a, b));
  }
}

/** The index of the selected pod among `rows` (the first when none or gone). */
export function selectedIndex(rows: readonly PodRow[], selected: string | null): number {
  if (rows.length === 0) return -1;
  const i = selected === null ? -1 : rows.findIndex((r) => r.key === selected);
  return i < 0 ? 0 : i;
}

/** What a key does: the next view state, or 'quit'. `rows` are the visible pods; `page` the table height. */
export function reduceKey(view: ViewState, key: KeyPress, rows: readonly PodRow[], page = 10): ViewState | 'quit' {
  if (key.ctrl && key.input === 'c') return 'quit';

  if (view.filterDraft !== null) {
    if (key.escape) return { ...view, filterDraft: null };
    if (key.return) return { ...view, filter: view.filterDraft, filterDraft: null, selected: null };
    if (key.backspace || key.delete) return { ...view, filterDraft: view.filterDraft.slice(0, -1) };
    if (key.input !== '' && !key.ctrl && !key.tab && !key.upArrow && !key.downArrow) {
      return { ...view, filterDraft: view.filterDraft + key.input };
    }
    return view;
  }

  if (key.input === 'q') return 'quit';
  if (view.mode === 'help') return { ...view, mode: 'main' }; // any key closes the help
  if (key.input === '?') return { ...view, mode: 'help' };

  const move = (delta: number): ViewState => {
    if (rows.length === 0) return view;
    const i = Math.min(rows.length - 1, Math.max(0, selectedIndex(rows, view.selected) + delta));
    return { ...view, selected: rows[i]?.key ?? null, container: 0, follow: false };
  };

  if (view.mode === 'detail') {
    if (key.escape) return { ...view, mode: 'main', follow: false };
    if (key.input === 'l') return { ...view, follow: !view.follow };
    if (key.tab) return { ...view, container: view.container + 1 };
    if (key.upArrow || key.input === 'k') return { ...move(-1), mode: 'detail' };
    if (key.downArrow || key.input === 'j') return { ...move(1), mode: 'detail' };
    return view;
  }

  if (key.upArrow || key.input === 'k') return move(-1);
  if (key.downArrow || key.input === 'j') return move(1);
  if (key.pageUp) return move(-page);
  if (key.pageDown) return move(page);
  if (key.return) {
    if (rows.length === 0) return view;
    const i = selectedIndex(rows, view.selected);
    return { ...view, mode: 'detail', selected: rows[i]?.key ?? null, container: 0, follow: false };
  }
  if (key.escape) return view.filter === '' ? view : { ...view, filter: '', selected: null };
  if (key.input === 's') return { ...view, sort: SORT_KEYS[(SORT_KEYS.indexOf(view.sort) + 1) % SORT_KEYS.length] as SortKey };
  if (key.input === '/') return { ...view, filterDraft: view.filter };
  return view;
}
