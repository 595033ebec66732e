/** The report page's CSS (inline; system fonts only). */
export const PAGE_STYLE = `
:root {
  --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #ffffff; --panel: #f6f8fa;
  --red: #d62828; --green: #1a7f37; --amber: #9a6700; --blue: #1565c0;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; background: var(--bg); color: var(--fg); }
body {
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif;
}
#app { max-width: 1600px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 20px; margin: 0 0 6px; word-break: break-all; }
h2 { font-size: 17px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
h4 { font-size: 14px; margin: 14px 0 6px; }
.top {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 10px 16px;
  padding-bottom: 12px;
  border-bottom: 1px solid var(--line);
}
.top .titles { flex: 1 1 400px; min-width: 0; }
.top .file { color: var(--muted); font-family: var(--mono); font-size: 12px; word-break: break-all; }
.verdict {
  font-weight: 700;
  font-size: 15px;
  letter-spacing: .04em;
  padding: 6px 14px;
  border-radius: 6px;
  color: #fff;
}
.verdict.consistent { background: var(--green); }
.verdict.inconsistent { background: var(--red); }
.verdict.unknown { background: var(--amber); }
.summary { margin: 10px 0 0; color: var(--fg); }
.reason, .note { margin: 6px 0; color: var(--muted); }
.reason { color: var(--amber); }
.grid { display: flex; flex-wrap: wrap; gap: 16px 32px; align-items: flex-start; }
.grid > div { min-width: 260px; }
table.kv, table.levels { border-collapse: collapse; font-size: 13px; }
table.kv td, table.kv th, table.levels td, table.levels th {
  border-bottom: 1px solid #eaeef2;
  padding: 3px 10px 3px 0;
  text-align: left;
  vertical-align: top;
}
table.kv th, table.levels th { color: var(--muted); font-weight: 600; }
table.kv td.v { font-family: var(--mono); font-size: 12px; word-break: break-word; max-width: 520px; }
table.levels td.n { text-align: right; font-variant-numeric: tabular-nums; }
.chip {
  display: inline-block;
  padding: 0 6px;
  margin: 0 4px 2px 0;
  border-radius: 4px;
  font-size: 12px;
  font-weight: 600;
  color: #111;
  white-space: nowrap;
}
.anomaly {
  border: 1px solid var(--line);
  border-left: 4px solid var(--red);
  border-radius: 6px;
  padding: 4px 16px 14px;
  margin: 14px 0;
}
.anomaly h3 .violates { font-weight: 400; color: var(--red); margin-left: 8px; font-size: 13px; }
.anomaly h3 .literature { font-weight: 400; color: var(--muted); margin-left: 8px; font-size: 13px; }
.anomaly .message { margin: 4px 0 8px; }
.case { margin: 10px 0 4px; }
.case h4 { color: var(--blue); }
.case-body { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.graph {
  flex: 0 1 auto;
  min-width: 0;
  overflow: auto;
  border: 1px solid #eaeef2;
  border-radius: 6px;
  background: #fcfcfd;
  padding: 6px;
}
.graph svg { max-width: none; height: auto; display: block; margin: 0 auto; }
.graph g.node.txn, .graph g.node { cursor: pointer; }
.graph g.edge.hl path, .graph g.edge.hl polygon { stroke-width: 5; }
.graph g.edge.hl text { font-weight: 700; }
.graph-error { color: var(--amber); }
.words { flex: 1 1 340px; min-width: 300px; max-width: 720px; }
.words ol { padding-left: 22px; margin: 6px 0; }
.words li { margin: 4px 0; padding: 2px 4px; border-radius: 4px; }
.words li:hover, .words li.hl { background: #fff1f1; }
.kind {
  display: inline-block;
  font-family: var(--mono);
  font-size: 11px;
  font-weight: 700;
  padding: 0 5px;
  border-radius: 3px;
  margin-right: 6px;
  color: #fff;
  background: #555;
}
.kind.wr { background: #2e7d32; } .kind.axiom { background: #6a1b9a; } .kind.witness { background: #b5651d; }
.kind.assumed { background: #1565c0; } .kind.rw { background: #8d6e63; } .kind.so { background: #555; }
.assume { color: var(--blue); }
.txn-desc { margin: 6px 0 10px; }
.txn-desc .head { font-weight: 600; }
.txn-desc summary { cursor: pointer; color: var(--muted); font-size: 13px; }
.txn-desc pre { white-space: pre; max-height: 360px; overflow: auto; }
a.txnlink, button.link {
  color: var(--blue);
  cursor: pointer;
  text-decoration: underline;
  text-decoration-style: dotted;
  background: none;
  border: 0;
  padding: 0;
  font: inherit;
}
pre, .mono { font-family: var(--mono); font-size: 12px; }
pre {
  background: var(--panel);
  border-radius: 6px;
  padding: 8px 10px;
  overflow-x: auto;
  margin: 4px 0;
  white-space: pre-wrap;
  word-break: break-word;
}
details.terminal summary { cursor: pointer; color: var(--muted); margin-top: 10px; }
.legend {
  display: flex;
  flex-wrap: wrap;
  gap: 6px 14px;
  align-items: center;
  font-size: 12px;
  color: var(--muted);
  margin: 6px 0;
}
.legend .sw {
  display: inline-block;
  width: 22px;
  height: 11px;
  vertical-align: -1px;
  margin-right: 5px;
  border-radius: 2px;
  border: 1px solid rgba(0,0,0,.25);
}
.toolbar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.toolbar button {
  font: inherit;
  font-size: 13px;
  padding: 3px 10px;
  border: 1px solid var(--line);
  border-radius: 5px;
  background: #fff;
  cursor: pointer;
}
.toolbar button:hover { background: var(--panel); }
.toolbar label { font-size: 13px; user-select: none; }
.hint { color: var(--muted); font-size: 12px; margin: 4px 0; }
.tl-layout { display: flex; gap: 16px; align-items: flex-start; }
.tl-main {
  flex: 1 1 auto;
  min-width: 0;
  position: relative;
  border: 1px solid var(--line);
  border-radius: 6px;
  overflow: hidden;
}
#tl { display: block; cursor: grab; touch-action: none; }
#tl.dragging { cursor: grabbing; }
#tl.over { cursor: pointer; }
#tip {
  position: absolute;
  pointer-events: none;
  background: rgba(31,35,40,.92);
  color: #fff;
  font-size: 12px;
  padding: 4px 8px;
  border-radius: 4px;
  white-space: pre;
  display: none;
  z-index: 2;
  max-width: 520px;
  overflow: hidden;
  text-overflow: ellipsis;
}
#details {
  flex: 0 0 420px;
  max-width: 420px;
  border: 1px solid var(--line);
  border-radius: 6px;
  padding: 8px 12px 12px;
  background: #fff;
  max-height: 80vh;
  overflow: auto;
  position: sticky;
  top: 8px;
}
#details .empty { color: var(--muted); }
#details h3 { margin: 4px 0 6px; word-break: break-all; }
#details h3 .lb { font-weight: 400; color: var(--muted); margin-left: 8px; }
#details .flag { color: var(--red); font-weight: 600; margin: 4px 0; }
.stmt { border-top: 1px solid #eaeef2; padding: 6px 0; }
.stmt-head { font-family: var(--mono); font-size: 12px; word-break: break-word; }
.stmt-head .op { font-weight: 700; }
.rows { margin: 4px 0 0 14px; font-family: var(--mono); font-size: 11.5px; }
.rows .row { padding: 1px 0 1px 16px; text-indent: -16px; word-break: break-all; }
.rows .row .w { color: var(--muted); }
.muted { color: var(--muted); }
.level-strip { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0; }
.level-mark { font-weight: 700; font-size: 13px; padding: 2px 10px; border-radius: 5px; color: #fff; }
.level-mark.consistent, .mark.consistent { background: var(--green); }
.level-mark.inconsistent, .mark.inconsistent { background: var(--red); }
.level-mark.unknown, .mark.unknown { background: var(--amber); }
table.boundary td.mark { color: #fff; font-weight: 700; text-align: center; border-radius: 4px; width: 1.6em; }
table.boundary td.verdict-text, table.by-label td.verdict-text { padding-left: 8px; }
.levels-boundary details { margin: 2px 0 4px; }
.levels-boundary details > summary { cursor: pointer; color: var(--muted); font-size: 12px; }
.levels-boundary details pre { max-height: 200px; overflow: auto; }
.levels-boundary .strongest { font-weight: 700; margin: 10px 0; }
.levels-boundary pre.spec { font-size: 13px; }
.graph.split g.node.case { cursor: pointer; }
.case.flash { outline: 2px solid var(--blue); outline-offset: 4px; border-radius: 6px; }
@media (max-width: 1100px) {
  .tl-layout { flex-direction: column; }
  #details { flex: 1 1 auto; max-width: none; width: 100%; position: static; }
}
`;
