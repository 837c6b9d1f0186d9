// speedgate dashboard: reads /api/v1/* and draws Chart.js charts and the trial table.
// Every value from the DB is inserted as text (textContent), never as HTML.
// Scale: the charts read one columnar series per campaign, which the server samples to
// at most 500 trials (every disposition, the frontier and the presets' trials kept;
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
const charts = {};
const sizes = {};          // canvas id -> {w, h} of its container
const timing = {};         // phase -> ms since navigation start (reported with "ready")
const mark = (phase) => { timing[phase] = Math.round(performance.now()); };
let campaignId = null;
let pageOffset = 0;

const el = (id) => document.getElementById(id);
const color = (d) => COLORS[d] || '#3465a4';
const gib = (b) => (b == null ? null : b / GIB);
const fmt = (x, digits) => (x == null || Number.isNaN(x) ? '–' : Number(x).toFixed(digits));

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
    normalized: true, parsing: false, events: ['click'], plugins: { tooltip: { enabled: true } },
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

function byDisposition(series, x, y) {
  const groups = {};
  for (let i = 0; i < series.id.length; ++i) {
    const v = y(i);
    const xv = x(i);
    if (v == null || xv == null) continue;
    (groups[series.disposition[i]] = groups[series.disposition[i]] || []).push({ x: xv, y: v });
  }
  return Object.entries(groups).map(([d, data]) => ({
    label: d, data, backgroundColor: color(d), borderColor: color(d), pointRadius: 2.5, showLine: false }));
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

function axes(x, y) {
  const ticks = { callback: tickLabel };
  return { scales: { x: { type: 'linear', title: { display: true, text: x }, ticks },
                     y: { type: 'linear', title: { display: true, text: y }, ticks } } };
}

// body: the /series answer (series sampled by the server, totals = what each chart
// stands for). The frontier line joins the frontier trials sent (all of them unless
// there are more than 500).
function drawCampaignCharts(body, presets, budgets) {
  const s = body.series;
  const totals = body.totals;
  const all = [...s.id.keys()];
  const trial = (i) => s.index[i];
  draw('chart-speedup', { type: 'scatter', data: { datasets: byDisposition(s, trial, (i) => s.speedup[i]) },
    options: axes('trial', 'speedup ×') }, totals.speedup);
  draw('chart-throughput', { type: 'scatter', data: { datasets: byDisposition(s, trial, (i) => s.samples_per_s[i]) },
    options: axes('trial', 'samples/s') }, totals.throughput);

  const proj = (i) => gib(s.projected_peak_bytes[i]);
  const frontier = all.filter((i) => s.on_frontier[i] && proj(i) != null && s.samples_per_s[i] != null)
    .map((i) => ({ x: proj(i), y: s.samples_per_s[i] })).sort((a, b) => a.x - b.x);
  const datasets = byDisposition(s, proj, (i) => s.samples_per_s[i]);
  datasets.push({ label: 'frontier', data: frontier, showLine: true, borderColor: '#1d2330',
                  backgroundColor: '#1d2330', pointRadius: 0, decoration: true });
  let ymax = 1;
  for (const i of all) ymax = Math.max(ymax, s.samples_per_s[i] || 0);
  for (const b of budgets) {
    datasets.push({ label: 'budget ' + b.name, data: [{ x: gib(b.bytes), y: 0 }, { x: gib(b.bytes), y: ymax * 1.1 }],
                    showLine: true, borderDash: [6, 4], borderColor: '#d64545', pointRadius: 0, decoration: true });
  }
  if (presets.length) {
    datasets.push({ label: 'presets', data: presets.map((p) => ({ x: gib(p.projected_peak_bytes), y: p.samples_per_s })),
                    pointStyle: 'star', pointRadius: 12, borderColor: '#000', backgroundColor: '#ffd400', decoration: true });
  }
  draw('chart-frontier', { type: 'scatter', data: { datasets }, options: axes('projected peak GiB', 'samples/s') },
       totals.frontier);

  const pts = all.filter((i) => s.measured_peak_bytes[i] != null && proj(i) != null)
                 .map((i) => ({ x: proj(i), y: gib(s.measured_peak_bytes[i]) }));
  let m = 1e-3;
  for (const p of pts) m = Math.max(m, p.x, p.y);
  draw('chart-memory', { type: 'scatter', data: { datasets: [
      { label: 'trials', data: pts, backgroundColor: '#3465a4', pointRadius: 2.5 },
      { label: 'measured = projected', data: [{ x: 0, y: 0 }, { x: m, y: m }], showLine: true,
        pointRadius: 0, borderColor: '#999', decoration: true }] },
    options: axes('projected peak GiB', 'measured peak GiB (this device)') }, totals.memory);
}

function drawTrend(series) {
  const palette = ['#3465a4', '#2e9d57', '#d64545', '#8a63d2', '#e0a030'];
  const datasets = Object.entries(series).map(([name, points], i) => ({
    label: name, data: points.map((p) => ({ x: p.campaign_id, y: p.speedup })), showLine: true,
    // A night that demoted the preset (speedgate nightly) draws a large cross.
    pointStyle: points.map((p) => (p.demoted ? 'crossRot' : 'circle')),
    pointRadius: points.map((p) => (p.demoted ? 8 : 3)),
    borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length] }));
  draw('chart-trend', { type: 'scatter', data: { datasets }, options: axes('campaign (night)', 'speedup ×') });
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
    cell(tr, String(r.id));
    cell(tr, r.strategy);
    cell(tr, r.config_key || '(baseline)', 'config');
    const d = cell(tr, '');
    const badge = document.createElement('span');
    badge.className = 'disp';
    badge.style.background = color(r.disposition);
    badge.textContent = r.disposition;
    d.appendChild(badge);
    cell(tr, r.gate_class);
    cell(tr, r.speedup == null ? '–' : fmt(r.speedup, 3) + ' ± ' + fmt(r.speedup_spread, 3));
    cell(tr, fmt(r.samples_per_s, 2));
    cell(tr, r.projected_peak_bytes == null ? '–' : fmt(gib(r.projected_peak_bytes), 2) + ' GiB');
    cell(tr, r.measured_peak_bytes == null ? '–' : fmt(gib(r.measured_peak_bytes), 2) + ' GiB');
    cell(tr, r.reason, 'reason');
    const logs = cell(tr, '');
    for (const id of (r.trial_ids || []).slice(0, 4)) {
      const a = document.createElement('a');
      a.href = '/logs/' + encodeURIComponent(id) + '/stderr';
      a.textContent = 'run ' + id;
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
  const id = campaignId;
  const url = '/api/v1/campaigns/' + id + '/trials?' + params;
  const first = url === '/api/v1/campaigns/' + id + '/trials?offset=0&limit=' + PAGE + '&disposition=&q=';
  return (first && (await prefetched('table', id))) || getJson(url);
}

function showTable(page) {
  renderRows(page.trials);
  const last = Math.min(page.offset + page.trials.length, page.matched);
  el('table-count').textContent = page.matched ? (page.offset + 1) + '–' + last + ' of ' + page.matched : 'no trials match';
  el('page-prev').disabled = page.offset === 0;
  el('page-next').disabled = last >= page.matched;
}

async function loadTable() { showTable(await fetchTable()); }

// Fetches the campaign's series, presets and first table page together; draws the charts
// first, then the table (below them).
async function loadCampaign(id) {
  campaignId = id;
  pageOffset = 0;
  const [series, presets, page] = await Promise.all([
    prefetched('series', id).then((p) => p || getJson('/api/v1/campaigns/' + id + '/series')),
    prefetched('presets', id).then((p) => p || getJson('/api/v1/campaigns/' + id + '/presets')),
    fetchTable()]);
  mark('data');
  const sel = el('filter-disposition');
  const current = sel.value;
  sel.replaceChildren(new Option('all dispositions', ''));
  for (const d of Object.keys(series.dispositions)) sel.appendChild(new Option(d, d));
  sel.value = current;
  drawCampaignCharts(series, presets.presets, series.budgets);
  showTable(page);
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
    el('summary').textContent = c ? c.state + ' · ' + c.evaluations + ' trials · best ' + fmt(c.best_speedup, 3) +
      '× · ' + (c.deterministic === false ? 'NON-deterministic: all gated by tolerance' : 'deterministic') : 'no campaigns yet';
    if (c) await loadCampaign(c.id);
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
  if (campaigns.length) sel.value = String(campaigns[0].id);
  await show();
}

main().catch((e) => { document.body.dataset.ready = 'error'; el('summary').textContent = String(e); });
