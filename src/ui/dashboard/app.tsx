/**
 * The dashboard's ink component: the store's snapshot through
 * useSyncExternalStore, the person's choices (view.ts), and the screen
 * laid out by screen.ts, drawn as one Text per line — no Box per cell, so a
 * frame costs the same whatever the history and about one Text per row.
 * Only `klet dashboard` and `klet sync --tui` import this (ink and React are
 * loaded by them alone).
 */
import chalk from 'chalk';
import { memo, useEffect, useState, useSyncExternalStore } from 'react';
import { Box, Text, useApp, useInput, useWindowSize, type Key } from 'ink';
import type { V1Pod } from '@kubernetes/client-node';
import { detailContainer, renderScreen, type Line, type Size } from '../../lib/dashboard/screen.js';
import type { DashboardStore } from '../../lib/dashboard/store.js';
import { INITIAL_VIEW, keyPresses, reduceKey, visiblePods, type KeyPress, type ViewState } from '../../lib/dashboard/view.js';

export interface DashboardAppProps {
  store: DashboardStore;
  /** Colour (false with NO_COLOR). */
  color: boolean;
  /** Tail a container's log into the store until the signal aborts (the detail view's `l`). */
  followLog?: (pod: V1Pod, container: string, signal: AbortSignal) => void;
  /** A fixed size instead of the terminal's (tests). */
  size?: Size;
  /** Called on q / Ctrl-C, after ink has been asked to exit. */
  onQuit?: () => void;
  initialView?: ViewState;
}

function sameLine(a: { line: Line; color: boolean }, b: { line: Line; color: boolean }): boolean {
  if (a.color !== b.color || a.line.length !== b.line.length) return false;
  return a.line.every((s, i) => {
    const t = b.line[i];
    return t !== undefined && s.text === t.text && s.color === t.color && s.bold === t.bold && s.inverse === t.inverse;
  });
}

/**
 * A line as one string with its colours as ANSI codes (chalk, as ink's own
 * Text would style it): one ink text node per line instead of one per
 * segment, so ink lays out, squashes and measures a single node.
 */
export function lineText(line: Line, color: boolean): string {
  let out = '';
  for (const s of line) {
    let t = s.text;
    if (color && s.color !== undefined) t = chalk[s.color](t);
    if (s.bold) t = chalk.bold(t);
    if (s.inverse) t = chalk.inverse(t);
    out += t;
  }
  return out === '' ? ' ' : out;
}

/** One line of the screen; unchanged lines (most of them, most frames) are not re-rendered. */
const ScreenLine = memo(function ScreenLine({ line, color }: { line: Line; color: boolean }) {
  return <Text wrap="truncate">{lineText(line, color)}</Text>;
}, sameLine);

/** What the reducer needs of ink's key. */
function inkKeyPress(input: string, key: Key): KeyPress {
  return {
    input,
    upArrow: key.upArrow,
    downArrow: key.downArrow,
    pageUp: key.pageUp,
    pageDown: key.pageDown,
    return: key.return,
    escape: key.escape,
    backspace: key.backspace,
    delete: key.delete,
    tab: key.tab,
    ctrl: key.ctrl,
  };
}

export function DashboardApp({ store, color, followLog, size, onQuit, initialView }: DashboardAppProps) {
  const snap = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const window = useWindowSize();
  const screen: Size = size ?? { columns: window.columns || 80, rows: window.rows || 24 };
  const [view, setView] = useState<ViewState>(initialView ?? INITIAL_VIEW);
  const { exit } = useApp();

  useInput((input, key) => {
    // A chunk of keys (pasted, or typed faster than a frame) counts key by key; its newline is Enter.
    let current = view;
    for (const press of keyPresses({ ...inkKeyPress(input, key), meta: key.meta })) {
      const next = reduceKey(current, press, visiblePods(snap.pods, current), Math.max(1, screen.rows - 12));
      if (next === 'quit') {
        exit();
        onQuit?.();
        return;
      }
      current = next;
    }
    if (current !== view) setView(current);
  });

  // The detail view's log tail: one follower for the selected container while `l` is on.
  const pod = view.mode === 'detail' && view.follow ? snap.pods.find((p) => p.key === view.selected)?.pod : undefined;
  const container = pod === undefined ? undefined : detailContainer(pod, view.container)?.name;
  const uid = pod?.metadata?.uid;
  useEffect(() => {
    if (pod === undefined || container === undefined || followLog === undefined) return;
    const ac = new AbortController();
    followLog(pod, container, ac.signal);
    return () => {
      ac.abort();
      store.setLogTarget(null);
    };
    // Restart only when the pod (by UID) or container changes, not on every /pods answer.
  }, [uid, container, followLog, store]);

  const lines = renderScreen(snap, view, screen);
  return (
    // Lines are cut to the width by renderScreen (and by Text's truncate): only
    // the height is clipped. A horizontal clip made ink measure and re-slice
    // every line of every frame (about a fifth of a frame's CPU).
    <Box flexDirection="column" width={screen.columns} height={screen.rows} overflowY="hidden">
      {lines.map((l, i) => (
        <ScreenLine key={i} line={l} color={color} />
      ))}
    </Box>
  );
}
