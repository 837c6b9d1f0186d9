// speedgate dashboard: reads /api/v1/* and draws Chart.js charts and the trial table.
// Every value from the DB is inserted as text (textContent), never as HTML.
// Scale: the charts read one columnar series per campaign; above MAX_POINTS trials a
// chart draws MAX_POINTS of them, frontier trials first and an even sample of the rest
// (its caption says so); the table is paged and filtered by the server.
// Speed (docs/dashboard.md, benchmarks/results/dashboard.md): index.html starts the first
// view's requests before Chart.js loads; charts are sized once from their containers
// (responsive: false, no per-chart style reads), drawn without animation or parsing, on a
// CPU-backed 2D context; "ready" is reported after the frame showing them is produced.
'use strict';

const COLORS = {
  accepted: '#2e9d57', gate_failed: '#d64545', slower: '#e0a030', pruned: '#8a63d2',
  oom: '#b02e8f', killed: '#555', timeout: '#777', crash: '#000', nan: '#c0392b',
  invalid_result: '#a0522d', stale: '#999'
};
const GIB = 1024 * 1024 * 1024;
const PAGE = 50;           // table rows per page
const MAX_POINTS = 1000;   // points drawn per chart
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
  const note = canvas.closest('figure').querySelector('.sampled');
  if (note) note.textContent = total != null && drawn < total ? ' — ' + drawn + ' of ' + total + ' points drawn' : '';
}

// At most `room` elements of `list`, evenly spread over it.
function spread(list, room) {
  if (list.length <= room) return list;
  const out = [];
  const stride = list.length / room;
  for (let k = 0; k < room; ++k) out.push(list[Math.floor(k * stride)]);
  return out;
}

// Indices of the trials a chart draws: all when few; else at most MAX_POINTS: the
// frontier trials (up to half of them, evenly spread) and an even sample of the rest, so
// every disposition keeps its share.
function sampleIndices(series) {
  const n = series.id.length;
  const all = [...Array(n).keys()];
  if (n <= MAX_POINTS) return all;
  const frontier = spread(all.filter((i) => series.on_frontier[i]), MAX_POINTS / 2);
  const rest = spread(all.filter((i) => !series.on_frontier[i]), MAX_POINTS - frontier.length);
  return frontier.concat(rest).sort((a, b) => a - b);
}

function byDisposition(series, indices, x, y) {
  const groups = {};
  for (const i of indices) {
    const v = y(i);
    const xv = x(i);
    if (v == null || xv == null) continue;
    (groups[series.disposition[i]] = groups[series.disposition[i]] || []).push({ x: xv, y: v });
  }
  return Object.entries(groups).map(([d, data]) => ({
    label: d, data, backgroundColor: color(d), borderColor: color(d), pointRadius: 2.5, showLine: false }));
}

function axes(x, y) {
  return { scales: { x: { type: 'linear', title: { display: true, text: x } },
                     y: { type: 'linear', title: { display: true, text: y } } } };
}

function drawCampaignCharts(s, presets, budgets) {
  const idx = sampleIndices(s);
  const n = s.id.length;
  const count = (f) => s.id.reduce((c, _, i) => c + (f(i) == null ? 0 : 1), 0);
  draw('chart-speedup', { type: 'scatter', data: { datasets: byDisposition(s, idx, (i) => i + 1, (i) => s.speedup[i]) },
    options: axes('trial', 'speedup ×') }, count((i) => s.speedup[i]));
  draw('chart-throughput', { type: 'scatter', data: { datasets: byDisposition(s, idx, (i) => i + 1, (i) => s.samples_per_s[i]) },
    options: axes('trial', 'samples/s') }, count((i) => s.samples_per_s[i]));

  const proj = (i) => gib(s.projected_peak_bytes[i]);
  const frontier = s.id.map((_, i) => i).filter((i) => s.on_frontier[i] && proj(i) != null)
    .map((i) => ({ x: proj(i), y: s.samples_per_s[i] })).sort((a, b) => a.x - b.x);
  const datasets = byDisposition(s, idx, proj, (i) => s.samples_per_s[i]);
  datasets.push({ label: 'frontier', data: frontier, showLine: true, borderColor: '#1d2330',
                  backgroundColor: '#1d2330', pointRadius: 0, decoration: true });
  let ymax = 1;
  for (let i = 0; i < n; ++i) ymax = Math.max(ymax, s.samples_per_s[i] || 0);
  for (const b of budgets) {
    datasets.push({ label: 'budget ' + b.name, data: [{ x: gib(b.bytes), y: 0 }, { x: gib(b.bytes), y: ymax * 1.1 }],
                    showLine: true, borderDash: [6, 4], borderColor: '#d64545', pointRadius: 0, decoration: true });
  }
  if (presets.length) {
    datasets.push({ label: 'presets', data: presets.map((p) => ({ x: gib(p.projected_peak_bytes), y: p.samples_per_s })),
                    pointStyle: 'star', pointRadius: 12, borderColor: '#000', backgroundColor: '#ffd400', decoration: true });
  }
  draw('chart-frontier', { type: 'scatter', data: { datasets }, options: axes('projected peak GiB', 'samples/s') },
       count((i) => (proj(i) == null ? null : s.samples_per_s[i])));

  const pts = idx.filter((i) => s.measured_peak_bytes[i] != null && proj(i) != null)
                 .map((i) => ({ x: proj(i), y: gib(s.measured_peak_bytes[i]) }));
  let m = 1e-3;
  for (const p of pts) m = Math.max(m, p.x, p.y);
  draw('chart-memory', { type: 'scatter', data: { datasets: [
      { label: 'trials', data: pts, backgroundColor: '#3465a4', pointRadius: 2.5 },
      { label: 'measured = projected', data: [{ x: 0, y: 0 }, { x: m, y: m }], showLine: true,
        pointRadius: 0, borderColor: '#999', decoration: true }] },
    options: axes('projected peak GiB', 'measured peak GiB (this device)') },
    count((i) => (s.measured_peak_bytes[i] == null ? null : proj(i))));
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

// The request index.html started for `what` of campaign `id`, once; else null.
async function prefetched(what, id) {
  const pre = window.firstView;
  if (!pre || !pre[what] || (await pre.newest) !== id) return null;
  const p = pre[what];
  pre[what] = null;
  return p;
}

async function loadTable() {
  const params = new URLSearchParams({ offset: String(pageOffset), limit: String(PAGE),
    disposition: el('filter-disposition').value, q: el('filter-text').value });
  const id = campaignId;
  const url = '/api/v1/campaigns/' + id + '/trials?' + params;
  const first = url === '/api/v1/campaigns/' + id + '/trials?offset=0&limit=' + PAGE + '&disposition=&q=';
  const page = await ((first && (await prefetched('table', id))) || getJson(url));
  renderRows(page.trials);
  const last = Math.min(page.offset + page.trials.length, page.matched);
  el('table-count').textContent = page.matched ? (page.offset + 1) + '–' + last + ' of ' + page.matched : 'no trials match';
  el('page-prev').disabled = page.offset === 0;
  el('page-next').disabled = last >= page.matched;
}

async function loadCampaign(id) {
  campaignId = id;
  pageOffset = 0;
  const [series, presets] = await Promise.all([
    prefetched('series', id).then((p) => p || getJson('/api/v1/campaigns/' + id + '/series')),
    prefetched('presets', id).then((p) => p || getJson('/api/v1/campaigns/' + id + '/presets')),
    loadTable()]);
  mark('data');
  const sel = el('filter-disposition');
  const current = sel.value;
  sel.replaceChildren(new Option('all dispositions', ''));
  for (const d of new Set(series.series.disposition)) sel.appendChild(new Option(d, d));
  sel.value = current;
  drawCampaignCharts(series.series, presets.presets, series.budgets);
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
