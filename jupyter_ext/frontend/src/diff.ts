/**
 * A proposal's diff against the cell it replaces, as lines to colour: the server sends a unified
 * diff (`difflib.unified_diff` of the old and new source); its file headers say nothing to a user
 * looking at one cell, so they are dropped, and each line is tagged removed, added, context or
 * a hunk header. Pure, so it is unit-tested.
 */

export type DiffKind = 'add' | 'del' | 'context' | 'hunk';

export interface DiffLine {
  kind: DiffKind;
  text: string; // without the leading +, - or space
}

export function diffLines(diff: string | null | undefined): DiffLine[] {
  const lines: DiffLine[] = [];
  if (!diff) {
    return lines;
  }
  let inHunk = false;
  for (const line of diff.replace(/\n$/, '').split('\n')) {
    if (!inHunk && (line.startsWith('--- ') || line.startsWith('+++ '))) {
      continue; // the file headers before the first hunk
    }
    if (line.startsWith('@@')) {
      inHunk = true;
      lines.push({ kind: 'hunk', text: line });
    } else if (line.startsWith('\\')) {
      continue; // "\ No newline at end of file"
    } else if (line.startsWith('+')) {
      lines.push({ kind: 'add', text: line.slice(1) });
    } else if (line.startsWith('-')) {
      lines.push({ kind: 'del', text: line.slice(1) });
    } else {
      lines.push({
        kind: 'context',
        text: line.startsWith(' ') ? line.slice(1) : line
      });
    }
  }
  return lines;
}
