// The markup every table of the dashboard shares: the wrapper that lets a wide table scroll on a
// narrow screen, its caption (read out to screen readers, and shown only where it says more than
// the heading above it), and a header row of column names. The rows are the view's own.
import type { ComponentChildren } from 'preact';

/** A column with no name to show (a row's buttons): screen readers hear "Actions". */
export const ACTIONS = null;

export function DataTable({
  class: className,
  caption,
  showCaption = false,
  columns,
  colgroup,
  after,
  children,
}: {
  class: string;
  caption: ComponentChildren;
  showCaption?: boolean;
  columns: ReadonlyArray<string | typeof ACTIONS>;
  /** Column classes (widths), when the view sets them. */
  colgroup?: ComponentChildren;
  /** What follows the table inside its wrapper (a note on the rows). */
  after?: ComponentChildren;
  /** The table's body. */
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table class={className}>
        <caption class={showCaption ? undefined : 'visually-hidden'}>{caption}</caption>
        {colgroup}
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c ?? 'actions'}>
                {c ?? <span class="visually-hidden">Actions</span>}
              </th>
            ))}
          </tr>
        </thead>
        {children}
      </table>
      {after}
    </div>
  );
}
