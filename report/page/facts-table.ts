/**
 * The Facts section: one row per fact, one column per observation; every value links to the
 * record it comes from, conflicts and changes from the previous driver are marked, and the
 * reasons values are missing are numbered notes under the table.
 */
import type { PageData } from '../page-data.ts';
import { breakable, colName, el, link } from './dom.ts';

export function factsSection(root: HTMLElement, data: PageData): void {
  const strs = data.strs;
  const cols = data.columns;
  root.appendChild(el('h2', { id: 'facts' }, ['Facts']));
  root.appendChild(
    el('p', {}, [
      'One column per observation (environment · GPU · driver · OS); every value links to the record it comes from. ⚠ marks records of one observation that disagree on a fact; a highlighted value changed from the previous driver of the same environment, GPU and OS (its value there is shown under it).',
    ]),
  );
  const head = el(
    'tr',
    {},
    [el('th', {}, ['fact']), el('th', {}, ['claims'])].concat(
      cols.map((column, i) =>
        el('th', { class: 'col' }, [
          colName(i) + ' ',
          link(strs[column.text]!, strs[column.link]!),
          column.records > 1 ? el('small', {}, [' (' + column.records + ' records)']) : null,
        ]),
      ),
    ),
  );
  const body = el('tbody');
  // The reasons facts have no value: one note per reason, numbered in the order of the table, with the facts it is for.
  const reasons: { reason: number; facts: [fact: string, column: number][] }[] = [];
  const reasonNote = (reason: number, fact: string, column: number): number => {
    let k = reasons.map((note) => note.reason).indexOf(reason);
    if (k < 0) {
      reasons.push({ reason, facts: [] });
      k = reasons.length - 1;
    }
    reasons[k]!.facts.push([fact, column]);
    return k + 1;
  };
  data.facts.forEach((group) => {
    const claims = group.claims.map((claim) => strs[claim]).join(', ');
    body.appendChild(
      el('tr', { class: 'group' }, [
        el('th', { colspan: 2 + cols.length }, [
          strs[group.probe] + ': ' + strs[group.title] + (group.claims.length ? ' (' + claims + ')' : ''),
        ]),
      ]),
    );
    group.rows.forEach((row) => {
      const fact = strs[group.probe] + '.' + strs[row.fact];
      const desc = strs[row.desc]!;
      const tr = el('tr', { 'data-fact': fact }, [
        el('th', { title: desc }, [
          breakable(strs[row.fact]!, 'ident fact-name'),
          desc ? el('small', {}, [' ', breakable(desc, 'desc')]) : null,
        ]),
        el('td', {}, [claims]),
      ]);
      const changed = new Map(row.changed ?? []);
      row.cells.forEach((cell, i) => {
        let td: HTMLTableCellElement;
        if (cell === -1) td = el('td', { class: 'none' }, ['–']);
        else if (typeof cell === 'number') td = el('td', { 'data-value': strs[cell] }, [link(strs[cell]!, strs[cols[i]!.link]!)]);
        else {
          const several = cell.length > 1;
          td = el('td', several ? { class: row.sys ? 'varies' : 'conflict' } : { 'data-value': strs[cell[0]![0]] });
          if (several) td.appendChild(document.createTextNode(row.sys ? 'varies: ' : '⚠ conflict: '));
          cell.forEach(([value, href, reason], k) => {
            if (k) td.appendChild(document.createTextNode(' ≠ '));
            const anchor = link(strs[value]!, strs[href]!);
            td.appendChild(anchor);
            if (reason !== undefined) {
              // The reason a value is missing, as a numbered note under the table (visible, and printed), and on hover.
              anchor.setAttribute('title', strs[reason]!);
              const noteNumber = reasonNote(reason, fact, i);
              td.appendChild(
                el('a', { href: '#reason-' + noteNumber, class: 'note-ref', title: strs[reason] }, [el('sup', {}, [String(noteNumber)])]),
              );
            }
          });
        }
        const was = changed.get(i);
        if (was !== undefined) {
          const prev = cols[i]!.prev;
          td.classList.add('changed');
          td.setAttribute('title', 'changed: ' + strs[was] + ' in ' + colName(prev) + ' (driver ' + strs[cols[prev]!.driver] + ')');
          td.appendChild(el('small', { class: 'was' }, ['was ' + strs[was] + ' in ' + colName(prev)]));
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  });
  root.appendChild(el('div', { class: 'scroll' }, [el('table', { class: 'facts' }, [el('thead', {}, [head]), body])]));
  root.appendChild(
    el('p', { class: 'note' }, [
      '– : not recorded for that column. A number after a value: the value is missing (null), and the note of that number below says why.',
    ]),
  );
  if (reasons.length) {
    root.appendChild(
      el(
        'ol',
        { class: 'reasons', id: 'reasons' },
        reasons.map((note, k) => {
          const facts = note.facts.map(([fact, column]) => fact + ' (' + colName(column) + ')').join(', ');
          return el('li', { id: 'reason-' + (k + 1), 'data-reason': strs[note.reason] }, [
            strs[note.reason],
            el('small', {}, [' ', breakable(facts, 'desc')]),
          ]);
        }),
      ),
    );
  }
}
