/**
 * Go's text/tabwriter, the part kubectl uses: cells separated by `\t`, a column is a block of
 * consecutive lines that have a tab-terminated cell in it, each cell padded to the block's widest
 * cell plus `padding` (at least `minWidth`); a line's last cell (not tab-terminated) is never
 * padded. kubectl's tables use minWidth 6, padding 3; `describe` uses minWidth 0, padding 2.
 */
export interface TabOptions {
  minWidth: number;
  padding: number;
}

export const TABLE_TABS: TabOptions = { minWidth: 6, padding: 3 };
export const DESCRIBE_TABS: TabOptions = { minWidth: 0, padding: 2 };

/** Display width: code points (Go's tabwriter counts runes). */
function width(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Aligns `text` (lines of tab-separated cells) as Go's tabwriter does. */
export function tabwrite(text: string, opts: TabOptions): string {
  const endsWithNewline = text.endsWith('\n');
  const lines = (endsWithNewline ? text.slice(0, -1) : text).split('\n').map((l) => l.split('\t'));
  const out: string[] = [];
  const widths: number[] = [];

  const writeLines = (from: number, to: number): void => {
    for (let i = from; i < to; i++) {
      const cells = lines[i] ?? [];
      let s = '';
      cells.forEach((c, j) => {
        const w = widths[j];
        s += j < cells.length - 1 && w !== undefined ? c + ' '.repeat(Math.max(0, w - width(c))) : c;
      });
      out.push(s);
    }
  };

  const format = (line0: number, line1: number): void => {
    const column = widths.length;
    let start = line0;
    for (let i = line0; i < line1; i++) {
      if (column >= (lines[i]?.length ?? 0) - 1) continue;
      writeLines(start, i);
      start = i;
      let w = opts.minWidth;
      for (; i < line1; i++) {
        const cells = lines[i] ?? [];
        if (column >= cells.length - 1) break;
        w = Math.max(w, width(cells[column] ?? '') + opts.padding);
      }
      widths.push(w);
      format(start, i);
      widths.pop();
      // Line i ended the block: it has no cell in this column, so the loop may step past it.
      start = i;
    }
    writeLines(start, line1);
  };

  format(0, lines.length);
  return out.join('\n') + (endsWithNewline ? '\n' : '');
}
