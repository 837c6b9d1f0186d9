// speedgate dashboard: reads /api/v1/* and draws Chart.js charts and the evaluations
// table. Words: an "evaluation" is one configuration judged by the gate; a "trainer run"
// is one run of the trainer behind it. Every value from the DB is inserted as text
// (textContent), never as HTML.
// Scale: the charts read one columnar series per campaign, which the server samples to
// at most 500 evaluations (every disposition, the frontier and the presets' trials kept;
// docs/dashboard.md) and sends with what they stand for (per-chart totals, every
// disposition's count); a sampled chart's caption says so. The table is paged and
// filtered by the server.
// Speed (docs/dashboard.md, benchmarks/results/dashboard.md): index.html starts every
// first-view request at once, before Chart.js loads; charts are sized once from their
// containers (responsive: false, no per-chart style reads), drawn without animation or
// parsing, on a CPU-backed 2D context; the table's first page is put in after the
// charts; "ready" is reported after the frame showing both is produced.
'use strict';

const COLORS = {
  accepted: '#2e9d57', gate_failed: '#d64545', slower: '#e0a030', pruned: '#8a63d2',
  oom: '#b02e8f', killed: '#555', timeout: '#777', crash: '#000', nan: '#c0392b',
  invalid_result: '#a0522d', stale: '#999'
};
const GIB = 1024 * 1024 * 1024;
const PAGE = 50;           // table rows per page
const REFRESH_MS = 5000;   // polling period while the shown campaign is running
const charts = {};
const sizes = {};          // canvas id -> {w, h} of its container
const timing = {};         // phase -> ms since navigation start (reported with "ready")
const mark = (phase) => { timing[phase] = Math.round(performance.now()); };
let campaignId = null;
let pageOffset = 0;
let sortBy = '';           // table column the server sorts by ('' = id)
let sortDir = 'asc';
let refreshTimer = null;
let evidenceId = null;     // the evaluation whose gate evidence is shown

const el = (id) => document.getElementById(id);
const color = (d) => COLORS[d] || '#3465a4';
const fmt = (x, digits) => (x == null || Number.isNaN(x) ? '–' : Number(x).toFixed(digits));
// A speedup with its interval: "1.08× [1.03, 1.12] 95 %, 5 pairs" when the paired bounds
// are recorded, else "1.08× ± 0.02".
function speedText(speedup, lo, hi, spread, pairs) {
  if (speedup == null) return '–';
  let t = fmt(speedup, 3) + '×';
  if (lo != null && hi != null) t += ' [' + fmt(lo, 3) + ', ' + fmt(hi, 3) + '] 95 %';
  else if (spread != null) t += ' ± ' + fmt(spread, 3);
  if (pairs != null) t += ', ' + pairs + ' pairs';
  return t;
}
// Bytes in the unit that fits the largest value shown: GiB, or MiB below 1 GiB (a CPU
// campaign's peaks are megabytes).
function memUnit(maxBytes) {
  return maxBytes >= GIB ? { div: GIB, name: 'GiB' } : { div: 1024 * 1024, name: 'MiB' };
}
const bytesText = (b) => { if (b == null) return '–'; const u = memUnit(b); return fmt(b / u.div, 2) + ' ' + u.name; };

async function getJson(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
  return r.json();
}

function canvasHasInk(canvas) {
  const { width, height } = canvas;
  if (!width || !height) return false;
  const data = canvas.getContext('2d').getImageData(0, 0, width, height).data;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) return true;
  return false;
}

// Reads every chart container's size in one layout pass; charts never read styles.
function measureCharts() {
  for (const box of document.querySelectorAll('.chart')) {
    sizes[box.querySelector('canvas').id] = { w: box.clientWidth, h: box.clientHeight };
  }
}

function resizeCharts() {
  measureCharts();
  for (const [id, chart] of Object.entries(charts)) chart.resize(sizes[id].w, sizes[id].h);
}

// config.total: how many values the chart stands for (its caption notes sampling).
// Data are {x, y} objects already (parsing: false).
function draw(id, config, total) {
  if (charts[id]) charts[id].destroy();
  config.options = Object.assign({ animation: false, responsive: false, maintainAspectRatio: false,
    normalized: true, parsing: false, events: ['mousemove', 'mouseout', 'click'],
    plugins: { tooltip: { enabled: true, callbacks: { label: tooltipLabel } } },
    elements: { point: { borderWidth: 0 } } }, config.options || {});
  const canvas = el(id);
  const { w, h } = sizes[id];
  canvas.width = w;
  canvas.height = h;
  canvas.style.width = w + 'px';
  canvas.style.height = h + 'px';
  // A CPU-backed canvas: cheaper for thousands of small points in software rendering, and
  // the render test reads its pixels back.
  charts[id] = new Chart(canvas.getContext('2d', { willReadFrequently: true }), config);
  const drawn = config.data.datasets.filter((d) => !d.decoration).reduce((n, d) => n + d.data.length, 0);
  canvas.dataset.points = String(total == null ? drawn : total);
  canvas.dataset.drawn = String(drawn);
  canvas.dataset.series = config.data.datasets.filter((d) => !d.decoration).map((d) => d.label).join(',');
  canvas.dataset.decorations = config.data.datasets.filter((d) => d.decoration).map((d) => d.label + ':' + d.data.length).join(',');
  const note = canvas.closest('figure').querySelector('.sampled');
  if (note) note.textContent = total != null && drawn < total ? ' — ' + drawn + ' of ' + total + ' points drawn' : '';
}

// Hover text: the evaluation behind a point (its id, disposition and value), else the
// dataset's own label.
function tooltipLabel(ctx) {
  const r = ctx.raw || {};
  if (r.tip) return r.tip;
  const y = typeof r.y === 'number' ? fmt(r.y, 3) : '';
  return r.id != null ? 'evaluation #' + r.id + ' · ' + ctx.dataset.label + ' · ' + y : ctx.dataset.label + ' ' + y;
}

// A click on a point that stands for an evaluation opens its gate evidence.
function onPointClick(event, elements, chart) {
  if (!elements.length) return;
  const r = chart.data.datasets[elements[0].datasetIndex].data[elements[0].index];
  if (r && r.id != null) showEvidence(r.id);
}

function byDisposition(series, x, y) {
  const groups = {};
  for (let i = 0; i < series.id.length; ++i) {
    const v = y(i);
    const xv = x(i);
    if (v == null || xv == null) continue;
    (groups[series.disposition[i]] = groups[series.disposition[i]] || []).push({ x: xv, y: v, id: series.id[i] });
  }
  return Object.entries(groups).map(([d, data]) => ({
    label: d, data, backgroundColor: color(d), borderColor: color(d), pointRadius: 2.5, pointHoverRadius: 5,
    showLine: false }));
}

// A tick's label as Chart.js's default writes it in English (decimals from the step
// between ticks, thousands grouped), without Intl.NumberFormat: creating the first one
// costs the page ~15 ms of ICU start-up before the first chart.
function tickLabel(value, index, ticks) {
  let step = ticks.length > 3 ? ticks[2].value - ticks[1].value : ticks.length > 1 ? ticks[1].value - ticks[0].value : value;
  if (Math.abs(step) >= 1 && value !== Math.floor(value)) step = value - Math.floor(value);
  const decimals = step ? Math.max(0, Math.min(20, -Math.floor(Math.log10(Math.abs(step))))) : 0;
  const [whole, fraction] = value.toFixed(decimals).split('.');
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',') + (fraction ? '.' + fraction : '');
}

// xInteger: the x axis counts things (evaluations, campaigns): whole-number ticks only.
function axes(x, y, xInteger) {
  const ticks = { callback: tickLabel };
  const xticks = xInteger ? { precision: 0, callback: (v) => (Number.isInteger(v) ? tickLabel(v, 0, [{ value: v }]) : '') } : ticks;
  return { onClick: onPointClick,
           scales: { x: { type: 'linear', title: { display: true, text: x }, ticks: xticks },
                     y: { type: 'linear', title: { display: true, text: y }, ticks } } };
}

// body: the /series answer (series sampled by the server, totals = what each chart
// stands for). The frontier line joins the frontier evaluations sent (all of them unless
// there are more than 500). Axes fit the data: a budget far beyond every point (an H200
// budget over a CPU campaign) is named in the caption instead of stretching the axis.
function drawCampaignCharts(body, presets, budgets) {
  const s = body.series;
  const totals = body.totals;
  const all = [...s.id.keys()];
  const trial = (i) => s.index[i];
  const speed = byDisposition(s, trial, (i) => s.speedup[i]);
  const best = body.best_so_far || { index: [], speedup: [] };
  if (best.index.length) {
    speed.push({ label: 'best so far', data: best.index.map((x, k) => ({ x, y: best.speedup[k],
      tip: 'best accepted so far: ' + fmt(best.speedup[k], 3) + '× (at evaluation ' + x + ')' })),
      showLine: true, stepped: 'before', borderColor: '#1d2330', backgroundColor: '#1d2330', borderWidth: 1.5,
      pointRadius: 0, pointHitRadius: 4, order: -1, decoration: true });
  }
  draw('chart-speedup', { type: 'scatter', data: { datasets: speed },
    options: axes('evaluation', 'speedup ×', true) }, totals.speedup);
  draw('chart-throughput', { type: 'scatter', data: { datasets: byDisposition(s, trial, (i) => s.samples_per_s[i]) },
    options: axes('evaluation', 'samples/s', true) }, totals.throughput);

  let maxBytes = 0;
  for (const i of all) maxBytes = Math.max(maxBytes, s.projected_peak_bytes[i] || 0, s.measured_peak_bytes[i] || 0);
  for (const p of presets) maxBytes = Math.max(maxBytes, p.projected_peak_bytes || 0);
  const unit = memUnit(maxBytes);
  const mem = (b) => (b == null ? null : b / unit.div);
  const proj = (i) => mem(s.projected_peak_bytes[i]);
  const frontier = all.filter((i) => s.on_frontier[i] && proj(i) != null && s.samples_per_s[i] != null)
    .map((i) => ({ x: proj(i), y: s.samples_per_s[i], id: s.id[i] })).sort((a, b) => a.x - b.x);
  const datasets = byDisposition(s, proj, (i) => s.samples_per_s[i]);
  datasets.push({ label: 'frontier', data: frontier, showLine: true, borderColor: '#1d2330',
                  backgroundColor: '#1d2330', pointRadius: 0, decoration: true });
  let ymax = 1;
  for (const i of all) ymax = Math.max(ymax, s.samples_per_s[i] || 0);
  const offScale = [];
  for (const b of budgets) {
    if (maxBytes > 0 && b.bytes > 1.5 * maxBytes) {
      offScale.push(b.name + ' ' + fmt(b.bytes / GIB, 1) + ' GiB');
      continue;
    }
    datasets.push({ label: 'budget ' + b.name, data: [{ x: mem(b.bytes), y: 0 }, { x: mem(b.bytes), y: ymax * 1.1 }],
                    showLine: true, borderDash: [6, 4], borderColor: '#d64545', pointRadius: 0, decoration: true });
  }
  const stars = presets.filter((p) => p.projected_peak_bytes != null && p.samples_per_s != null);
  if (stars.length) {
    // order -1: drawn last, on top of the evaluations' points.
    datasets.push({ label: 'presets', data: stars.map((p) => ({ x: mem(p.projected_peak_bytes), y: p.samples_per_s,
                      id: p.evaluation_id, tip: 'preset ' + p.name + ': ' + headlineText(p.headline) })),
                    pointStyle: 'rectRot', pointRadius: 9, pointHoverRadius: 11, borderWidth: 2, borderColor: '#000',
                    backgroundColor: '#ffd400', order: -1, decoration: true });
  }
  draw('chart-frontier', { type: 'scatter', data: { datasets },
                           options: axes('projected peak ' + unit.name, 'samples/s') }, totals.frontier);
  el('frontier-offscale').textContent = offScale.length ? ' — off scale: budget ' + offScale.join(', ') : '';

  const pts = all.filter((i) => s.measured_peak_bytes[i] != null && proj(i) != null)
                 .map((i) => ({ x: proj(i), y: mem(s.measured_peak_bytes[i]), id: s.id[i] }));
  let m = 0;
  for (const p of pts) m = Math.max(m, p.x, p.y);
  draw('chart-memory', { type: 'scatter', data: { datasets: [
      { label: 'evaluations', data: pts, backgroundColor: '#3465a4', pointRadius: 2.5 },
      { label: 'measured = projected', data: [{ x: 0, y: 0 }, { x: m || 1, y: m || 1 }], showLine: true,
        pointRadius: 0, borderColor: '#999', decoration: true }] },
    options: axes('projected peak ' + unit.name, 'measured peak ' + unit.name + ' (this device)') }, totals.memory);
}

// Each switch's own gain (its single-switch evaluation) with its interval: a bar from
// the lower to the upper bound, a diamond at the speedup, a line at 1×.
function drawSwitches(switches) {
  const box = el('chart-switches').closest('.chart');
  const rows = switches.filter((w) => w.speedup != null);
  el('switches-empty').textContent = rows.length ? '' : ' — no single-switch evaluations in this campaign';
  box.style.height = Math.max(120, 40 + 22 * rows.length) + 'px';
  sizes['chart-switches'] = { w: box.clientWidth, h: box.clientHeight };
  // A switch evaluated with what it requires (TEXT_CACHE_ENTRIES with TEXT_CACHE=1) says so.
  const labels = rows.map((w) => w.switch + '=' + (w.value == null ? '' : w.value) +
    ((w.with || []).length ? ' (+' + w.with.join(', ') + ')' : ''));
  const tip = (w) => w.config_key + ': ' + speedText(w.speedup, w.speedup_lo, w.speedup_hi, w.spread, w.pairs) +
    ' (' + w.disposition + ', evaluation #' + w.evaluation_id + ')';
  draw('chart-switches', { type: 'bar', data: { labels, datasets: [
    // A speedup is never below 0: a ± spread wider than the speedup is drawn from 0.
    { type: 'bar', label: 'interval', data: rows.map((w) => [Math.max(0, w.lo == null ? w.speedup : w.lo), w.hi == null ? w.speedup : w.hi]),
      backgroundColor: rows.map((w) => color(w.disposition) + '66'), borderColor: rows.map((w) => color(w.disposition)),
      borderWidth: 1, minBarLength: 2, barPercentage: 0.7 },
    { type: 'line', label: 'speedup', data: rows.map((w) => w.speedup), showLine: false, pointStyle: 'rectRot',
      pointRadius: 5, backgroundColor: '#1d2330', borderColor: '#1d2330', order: -1, decoration: true },
    { type: 'line', label: '1× (no change)', data: rows.map(() => 1), pointRadius: 0, borderDash: [2, 3],
      borderColor: '#d64545', borderWidth: 1.5, order: -2, decoration: true }] },
    options: { indexAxis: 'y', parsing: true, normalized: false,
      onClick: (e, els) => { if (els.length) showEvidence(rows[els[0].index].evaluation_id); },
      plugins: { legend: { display: false },
                 tooltip: { filter: (item) => item.datasetIndex < 2, callbacks: { label: (ctx) => tip(rows[ctx.dataIndex]) } } },
      scales: { x: { title: { display: true, text: "speedup × (the switch alone; 1 = baseline)" },
                     suggestedMin: 0.9, suggestedMax: 1.1, ticks: { callback: tickLabel } },
                y: { ticks: { autoSkip: false, font: { size: 11 } } } } } }, rows.length);
}

function drawTrend(series) {
  const palette = ['#3465a4', '#2e9d57', '#d64545', '#8a63d2', '#e0a030'];
  const datasets = Object.entries(series).map(([name, points], i) => ({
    label: name, data: points.map((p) => ({ x: p.campaign_id, y: p.speedup,
      tip: name + ' · campaign ' + p.campaign_id + ' · ' + fmt(p.speedup, 3) + '×' + (p.demoted ? ' (demoted)' : '') })),
    showLine: true,
    // A night that demoted the preset (speedgate nightly) draws a large cross.
    pointStyle: points.map((p) => (p.demoted ? 'crossRot' : 'circle')),
    pointRadius: points.map((p) => (p.demoted ? 8 : 3)),
    borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length] }));
  el('trend-empty').textContent = datasets.length ? '' : ' — no presets emitted yet';
  const options = axes('campaign (night)', 'speedup ×', true);
  options.scales.x.ticks.stepSize = 1;
  draw('chart-trend', { type: 'scatter', data: { datasets }, options });
}

function headlineText(h) {
  if (!h || h.speedup == null) return '–';
  const where = h.source === 'finals' ? ' at micro-batch ' + h.micro_batch + ', ' + h.rounds + ' rounds' : '';
  return speedText(h.speedup, h.lo, h.hi, h.spread, h.source === 'finals' ? null : h.pairs) + where;
}

function showPresets(presets) {
  const box = el('presets');
  box.replaceChildren();
  for (const p of presets) {
    const span = document.createElement('span');
    span.className = 'preset';
    span.textContent = p.name + ' ' + headlineText(p.headline);
    box.appendChild(span);
  }
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function renderRows(rows) {
  const body = document.querySelector('#trials tbody');
  body.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement('tr');
    const idCell = cell(tr, '');
    const open = document.createElement('a');
    open.href = '#evaluation-' + r.id;
    open.textContent = String(r.id);
    open.title = 'show the gate evidence';
    open.addEventListener('click', (e) => { e.preventDefault(); showEvidence(r.id); });
    idCell.appendChild(open);
    cell(tr, r.strategy);
    cell(tr, r.config_key || '(baseline)', 'config');
    const d = cell(tr, '');
    const badge = document.createElement('span');
    badge.className = 'disp';
    badge.style.background = color(r.disposition);
    badge.textContent = r.disposition;
    d.appendChild(badge);
    cell(tr, r.gate_class);
    cell(tr, speedText(r.speedup, r.speedup_lo, r.speedup_hi, r.speedup_spread, r.pairs));
    cell(tr, fmt(r.samples_per_s, 2));
    cell(tr, bytesText(r.projected_peak_bytes));
    cell(tr, bytesText(r.measured_peak_bytes));
    cell(tr, r.reason, 'reason');
    const logs = cell(tr, '');
    for (const id of (r.trial_ids || []).slice(0, 4)) {
      const a = document.createElement('a');
      a.href = '/logs/' + encodeURIComponent(id) + '/stderr';
      a.textContent = 'run ' + id;
      a.title = 'stderr of trainer run ' + id;
      logs.appendChild(a);
      logs.appendChild(document.createTextNode(' '));
    }
    body.appendChild(tr);
  }
}

// The answer to the request index.html started for `what` (of the newest campaign), once,
// if it is campaign `id`'s; else null.
async function prefetched(what, id) {
  const pre = window.firstView;
  if (!pre || !pre[what]) return null;
  const p = pre[what];
  pre[what] = null;
  const body = await p;
  return body && body.campaign_id === id ? body : null;
}

async function fetchTable() {
  const params = new URLSearchParams({ offset: String(pageOffset), limit: String(PAGE),
    disposition: el('filter-disposition').value, q: el('filter-text').value });
  if (sortBy) { params.set('sort', sortBy); params.set('dir', sortDir); }
  const id = campaignId;
  const url = '/api/v1/campaigns/' + id + '/evaluations?' + params;
  const first = url === '/api/v1/campaigns/' + id + '/evaluations?offset=0&limit=' + PAGE + '&disposition=&q=';
  return (first && (await prefetched('table', id))) || getJson(url);
}

function showTable(page) {
  renderRows(page.evaluations);
  const last = Math.min(page.offset + page.evaluations.length, page.matched);
  el('table-count').textContent = page.matched ? (page.offset + 1) + '–' + last + ' of ' + page.matched : 'no evaluations match';
  for (const th of document.querySelectorAll('#trials th[data-sort]')) {
    th.dataset.dir = th.dataset.sort === (sortBy || 'id') ? (sortBy ? sortDir : 'asc') : '';
  }
  el('page-prev').disabled = page.offset === 0;
  el('page-next').disabled = last >= page.matched;
}

async function loadTable() { showTable(await fetchTable()); }

// Fetches the campaign's series, presets and first table page together; draws the charts
// first, then the table (below them).
// refresh: a poll of the campaign already shown (keeps the page, the filter and the sort).
async function loadCampaign(id, refresh) {
  if (!refresh) { campaignId = id; pageOffset = 0; }
  const [series, presets, page, switches, gate] = await Promise.all([
    (refresh ? Promise.resolve(null) : prefetched('series', id)).then((p) => p || getJson('/api/v1/campaigns/' + id + '/series')),
    (refresh ? Promise.resolve(null) : prefetched('presets', id)).then((p) => p || getJson('/api/v1/campaigns/' + id + '/presets')),
    fetchTable(), getJson('/api/v1/campaigns/' + id + '/switches'), getJson('/api/v1/campaigns/' + id + '/gate')]);
  if (id !== campaignId) return;  // another campaign was picked meanwhile
  mark('data');
  const sel = el('filter-disposition');
  const current = sel.value;
  sel.replaceChildren(new Option('all dispositions', ''));
  for (const d of Object.keys(series.dispositions)) sel.appendChild(new Option(d, d));
  sel.value = current;
  drawCampaignCharts(series, presets.presets, series.budgets);
  drawSwitches(switches.switches);
  showPresets(presets.presets);
  showGate(gate);
  showTable(page);
  if (evidenceId != null && refresh) showEvidence(evidenceId);
}

// The gate's evidence for one evaluation: its loss curve against the baseline's with the
// band the gate allowed (baseline ± factor × the seeds' largest RMS deviation, drawn per
// step), the seed runs, and its speed pairs (candidate / baseline per pair) with the
// evaluation's figure and interval.
async function showEvidence(id) {
  evidenceId = id;
  const ev = await getJson('/api/v1/evaluations/' + encodeURIComponent(id) + '/evidence');
  const e = ev.evaluation;
  const panel = el('evidence');
  panel.hidden = false;
  el('evidence-title').textContent = 'Evaluation #' + e.id + ' · ' + e.strategy + ' · ' + e.disposition +
    ' · ' + e.gate_class + ' · ' + speedText(e.speedup, e.speedup_lo, e.speedup_hi, e.speedup_spread, e.pairs);
  el('evidence-config').textContent = e.config_key || '(baseline)';
  el('evidence-reason').textContent = e.reason;
  measureCharts();
  const L = ev.loss || {};
  const curve = (c) => c.step.map((x, k) => ({ x, y: c.loss[k] })).filter((p) => p.y != null);
  const sets = [];
  if (L.baseline) {
    const base = curve(L.baseline);
    if (L.limit != null) {
      sets.push({ label: 'band (±' + fmt(L.limit, 4) + ')', data: base.map((p) => ({ x: p.x, y: p.y + L.limit })),
                  showLine: true, pointRadius: 0, borderColor: 'rgba(52,101,164,.45)', backgroundColor: 'rgba(52,101,164,.12)',
                  fill: '+1', decoration: true });
      sets.push({ label: 'band low', data: base.map((p) => ({ x: p.x, y: p.y - L.limit })), showLine: true,
                  pointRadius: 0, borderColor: 'rgba(52,101,164,.45)', decoration: true });
    }
    sets.push({ label: 'baseline (seed ' + L.baseline.seed + ')', data: base, showLine: true, pointRadius: 2,
                borderColor: '#1d2330', backgroundColor: '#1d2330' });
  }
  for (const sd of L.band_seeds || []) {
    sets.push({ label: 'seed ' + sd.seed, data: curve(sd), showLine: true, pointRadius: 1, borderDash: [4, 3],
                borderColor: '#999', backgroundColor: '#999' });
  }
  if (L.candidate) {
    sets.push({ label: 'candidate', data: curve(L.candidate), showLine: true, pointRadius: 2, order: -1,
                borderColor: color(e.disposition), backgroundColor: color(e.disposition) });
  }
  draw('chart-evidence-loss', { type: 'scatter', data: { datasets: sets }, options: Object.assign(axes('step', 'loss', true),
    { plugins: { legend: { labels: { filter: (item) => item.text !== 'band low' } } } }) });
  el('evidence-loss-note').textContent = L.candidate_rms != null
    ? ' — candidate RMS deviation ' + fmt(L.candidate_rms, 5) + (L.limit != null ? ', band ' + fmt(L.limit, 5) + ' (×' + L.factor + ' of the seeds\' ' + fmt(L.band_rms, 5) + ')' : '')
    : (L.candidate ? '' : ' — no gate run recorded');
  const pairs = (ev.pairs || []).filter((p) => p.ratio != null);
  const psets = [{ label: 'pairs', data: pairs.map((p) => ({ x: p.index + 1, y: p.ratio,
    tip: 'pair ' + (p.index + 1) + ': ' + fmt(p.ratio, 3) + '× (runs ' + p.base_trial_id + ' → ' + p.cand_trial_id + ')' })),
    pointRadius: 4, backgroundColor: '#3465a4' }];
  const n = Math.max(1, pairs.length);
  const hline = (label, y, dash, colour) => ({ label, data: [{ x: 0.5, y }, { x: n + 0.5, y }], showLine: true,
    pointRadius: 0, borderDash: dash, borderColor: colour, decoration: true });
  if (e.speedup != null) psets.push(hline('speedup ' + fmt(e.speedup, 3), e.speedup, [], '#1d2330'));
  if (e.speedup_lo != null) psets.push(hline('95 % low', e.speedup_lo, [5, 4], '#2e9d57'));
  if (e.speedup_hi != null) psets.push(hline('95 % high', e.speedup_hi, [5, 4], '#2e9d57'));
  psets.push(hline('1× (no change)', 1, [2, 3], '#d64545'));
  draw('chart-evidence-pairs', { type: 'scatter', data: { datasets: psets },
    options: axes('pair', 'candidate / baseline samples/s', true) }, pairs.length);
  el('evidence-pairs-note').textContent = pairs.length ? ' — ' + pairs.length + ' pairs (' + ev.pairs_source + ')' : ' — no speed pairs';
  if (!loadCampaign.refreshing) panel.scrollIntoView({ block: 'nearest' });
}

// While the shown campaign runs, poll it (and the campaigns list, for its state).
function scheduleRefresh(campaigns) {
  clearTimeout(refreshTimer);
  const c = campaigns.find((x) => x.id === campaignId);
  if (!c || c.state !== 'running') { el('live').textContent = ''; return; }
  el('live').textContent = '● live (every ' + REFRESH_MS / 1000 + ' s)';
  refreshTimer = setTimeout(async () => {
    try {
      const { campaigns: now } = await getJson('/api/v1/campaigns');
      const cur = now.find((x) => x.id === campaignId);
      if (cur) showSummary(cur);
      loadCampaign.refreshing = true;
      await loadCampaign(campaignId, true);
      document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
      scheduleRefresh(now);
    } catch (err) {
      el('live').textContent = 'refresh failed: ' + err.message;
      scheduleRefresh(campaigns);
    } finally {
      loadCampaign.refreshing = false;
    }
  }, REFRESH_MS);
}

// The host's noise (A/A pairs) and the rounding band per step budget: what the speed and
// tolerance verdicts could resolve on this campaign's host.
function showGate(gate) {
  const parts = gate.host_noise.map((n) => n.steps + ' steps: A/A noise ' + fmt(100 * n.sd_log_ratio, 2) +
    ' % a pair, smallest detectable speedup ' + fmt(n.detectable_speedup, 3) + '× at ' + n.max_repeats + ' pairs' +
    (n.resolution > n.min_effect ? ' (min effect ' + fmt(100 * n.min_effect, 1) + ' % is below it)' : ''));
  for (const b of gate.rounding_bands) {
    parts.push(b.steps + ' steps: rounding band ' + Number(b.curve_rms).toExponential(2) + ' loss RMS (seed band ' +
      Number(b.seed_curve_rms).toExponential(2) + ')');
  }
  el('gate-noise').textContent = parts.length ? 'Gate: ' + parts.join(' · ') : '';
}

function showSummary(c) {
  el('summary').textContent = c.state + ' · ' + c.evaluations + ' evaluations · ' + c.trainer_runs + ' trainer runs · best ' +
    fmt(c.best_speedup, 3) + '× · ' + (c.deterministic === false ? 'NON-deterministic: all gated by tolerance' : 'deterministic');
}

let filterTimer = null;
function onFilter() {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => { pageOffset = 0; loadTable(); }, 150);
}

async function main() {
  mark('script');
  measureCharts();
  window.addEventListener('resize', () => { clearTimeout(main.resizeTimer); main.resizeTimer = setTimeout(resizeCharts, 100); });
  const pre = window.firstView || {};
  const [{ campaigns }, trend] = await Promise.all([pre.campaigns || getJson('/api/v1/campaigns'),
                                                    pre.trend || getJson('/api/v1/series/presets')]);
  const sel = el('campaign');
  for (const c of campaigns) {
    sel.appendChild(new Option('#' + c.id + ' ' + c.workload + '/' + c.size + ' ' + c.created_at, String(c.id)));
  }
  drawTrend(trend.series);
  const show = async () => {
    const c = campaigns.find((x) => String(x.id) === sel.value);
    if (c) showSummary(c);
    else el('summary').textContent = 'no campaigns yet';
    el('evidence').hidden = true;
    evidenceId = null;
    if (c) await loadCampaign(c.id);
    scheduleRefresh(campaigns);
    mark('drawn');
    // Ready = the frame that shows the charts and the table has been produced (a task
    // queued from requestAnimationFrame runs after that frame's paint).
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    const readyMs = Math.round(performance.now());
    // For the render test, after the measured time: does each canvas hold any ink?
    for (const id of Object.keys(charts)) el(id).dataset.rendered = canvasHasInk(el(id)) ? 'yes' : 'no';
    document.body.dataset.readyMs = String(readyMs);
    document.body.dataset.ready = 'yes';
    console.info('speedgate: dashboard ready in ' + readyMs + ' ms (' +
                 Object.entries(timing).map(([k, v]) => k + ' ' + v).join(', ') + ')');
  };
  sel.addEventListener('change', show);
  el('filter-text').addEventListener('input', onFilter);
  el('filter-disposition').addEventListener('change', () => { pageOffset = 0; loadTable(); });
  el('page-prev').addEventListener('click', () => { pageOffset = Math.max(0, pageOffset - PAGE); loadTable(); });
  el('page-next').addEventListener('click', () => { pageOffset += PAGE; loadTable(); });
  for (const th of document.querySelectorAll('#trials th[data-sort]')) {
    th.addEventListener('click', () => {
      const key = th.dataset.sort;
      if ((sortBy || 'id') === key) sortDir = sortDir === 'asc' ? 'desc' : 'asc';
      else { sortBy = key; sortDir = key === 'speedup' || key === 'samples_per_s' ? 'desc' : 'asc'; }
      if (key === 'id' && sortDir === 'asc') sortBy = '';
      pageOffset = 0;
      loadTable();
    });
  }
  const hash = /^#evaluation-(\d+)$/.exec(location.hash);
  if (campaigns.length) sel.value = String(campaigns[0].id);
  await show();
  if (hash) await showEvidence(Number(hash[1]));
}

main().catch((e) => { document.body.dataset.ready = 'error'; el('summary').textContent = String(e); });
