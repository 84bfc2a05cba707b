// A workflow's graph in the browser: the server draws it (so it shows without script);
// this lays its nodes out again with dagre, for any shape, fits the drawing to its box,
// and lets the user pan (drag) and zoom (wheel, or the buttons). A live page swaps in a
// new drawing every few seconds: it is laid out again, and keeps the user's view.
import dagre from "@dagrejs/dagre";

const views = new Map(); // graph id -> the viewBox the user chose, if any
const SVGNS = "http://www.w3.org/2000/svg";

function place(svg, rankdir) {
  const w = Number(svg.dataset.nodeW), h = Number(svg.dataset.nodeH);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir, nodesep: 22, ranksep: 56, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of svg.querySelectorAll("g.node")) g.setNode(node.dataset.id, { width: w, height: h });
  for (const edge of svg.querySelectorAll("path.edge")) {
    if (g.hasNode(edge.dataset.source) && g.hasNode(edge.dataset.target)) g.setEdge(edge.dataset.source, edge.dataset.target);
  }
  dagre.layout(g);
  return g;
}

// A long left-to-right graph (a chain of many steps) folded into bands, one under the
// other, so that it fits the box at a readable size: each node keeps dagre's place
// within its band; an edge from one band to the next goes down between them.
function fold(g, room) {
  const { width, height } = g.graph();
  const bands = Math.ceil(width / room);
  if (bands < 2) return null;
  const span = width / bands, gap = 28;
  const placed = new Map(), shift = new Array(bands).fill(Infinity);
  for (const id of g.nodes()) {
    const p = g.node(id), band = Math.min(bands - 1, Math.floor(p.x / span));
    placed.set(id, { band, x: p.x, y: p.y, w: p.width, h: p.height });
    shift[band] = Math.min(shift[band], p.x - p.width / 2 - 16);
  }
  let right = 0;
  for (const p of placed.values()) {
    p.x -= shift[p.band];
    p.y += p.band * (height + gap);
    right = Math.max(right, p.x + p.w / 2 + 16);
  }
  const edges = new Map();
  for (const e of g.edges()) {
    const a = placed.get(e.v), b = placed.get(e.w);
    let points;
    if (a.band === b.band) {
      const dx = -shift[a.band], dy = a.band * (height + gap);
      points = g.edge(e).points.map((q) => ({ x: q.x + dx, y: q.y + dy }));
    } else {
      const out = { x: a.x + a.w / 2, y: a.y }, into = { x: b.x - b.w / 2, y: b.y };
      const between = a.y + a.h / 2 + (height + gap - a.h) / 2;
      points = [out, { x: out.x + 12, y: out.y }, { x: out.x + 12, y: between }, { x: into.x - 12, y: between },
        { x: into.x - 12, y: into.y }, into];
    }
    edges.set(`${e.v}\n${e.w}`, points);
  }
  return { width: right, height: bands * (height + gap) - gap + 16, node: (id) => placed.get(id),
    points: (v, w) => edges.get(`${v}\n${w}`), folded: true };
}

// dagre's result, or a folded one, in one shape for drawing.
function plan(g) {
  return { width: g.graph().width, height: g.graph().height, node: (id) => g.node(id),
    points: (v, w) => g.edge(v, w)?.points, folded: false };
}

function draw(svg, laid) {
  const w = Number(svg.dataset.nodeW), h = Number(svg.dataset.nodeH);
  for (const node of svg.querySelectorAll("g.node")) {
    const p = laid.node(node.dataset.id);
    node.setAttribute("transform", `translate(${Math.round(p.x - w / 2)},${Math.round(p.y - h / 2)})`);
  }
  for (const edge of svg.querySelectorAll("path.edge")) {
    const pts = laid.points(edge.dataset.source, edge.dataset.target);
    if (!pts) continue;
    let d = `M${pts[0].x},${pts[0].y}`;
    for (let i = 1; i < pts.length; i += 1) d += ` L${pts[i].x},${pts[i].y}`;
    edge.setAttribute("d", d);
  }
  svg.dataset.full = `0 0 ${Math.ceil(laid.width)} ${Math.ceil(laid.height)}`;
}

function layOut(box) {
  const svg = box.querySelector("svg.graph");
  if (!svg || svg.dataset.laidOut) return;
  const room = Math.max(box.clientWidth - 20, 320);
  // Left to right, as Glue draws workflows, unless top to bottom, or left to right
  // folded into bands, shows the nodes larger.
  const across = plan(place(svg, "LR")), down = plan(place(svg, "TB"));
  const folded = fold(place(svg, "LR"), room);
  const scale = (laid) => Math.min(1, room / laid.width, 640 / laid.height);
  let chosen = across, name = "LR";
  if (scale(down) > scale(chosen) * 1.25) [chosen, name] = [down, "TB"];
  if (folded && scale(folded) > scale(chosen) * 1.25) [chosen, name] = [folded, "LR-folded"];
  draw(svg, chosen);
  svg.dataset.layout = name;
  svg.setAttribute("viewBox", views.get(svg.id) || svg.dataset.full);
  svg.setAttribute("width", "100%");
  const [, , fw, fh] = svg.dataset.full.split(" ").map(Number);
  svg.setAttribute("height", String(Math.ceil(Math.min(fh * Math.min(1, room / fw), 640)) + 4));
  svg.dataset.laidOut = "1";
  tools(box, svg);
}

function viewBox(svg) { return svg.getAttribute("viewBox").split(" ").map(Number); }

function zoom(svg, factor, cx, cy) {
  const [x, y, w, h] = viewBox(svg);
  const nx = cx - (cx - x) * factor, ny = cy - (cy - y) * factor;
  set(svg, [nx, ny, w * factor, h * factor]);
}

function set(svg, vb) {
  const text = vb.map((v) => Math.round(v * 10) / 10).join(" ");
  svg.setAttribute("viewBox", text);
  views.set(svg.id, text);
}

function tools(box, svg) {
  const bar = box.querySelector(".graph-tools");
  if (bar) {
    bar.hidden = false;
    const centre = () => { const [x, y, w, h] = viewBox(svg); return [x + w / 2, y + h / 2]; };
    bar.querySelector(".zoom-in").onclick = () => zoom(svg, 0.8, ...centre());
    bar.querySelector(".zoom-out").onclick = () => zoom(svg, 1.25, ...centre());
    bar.querySelector(".zoom-fit").onclick = () => { views.delete(svg.id); svg.setAttribute("viewBox", svg.dataset.full); };
  }
  const toGraph = (event) => {
    const [x, y, w, h] = viewBox(svg); const r = svg.getBoundingClientRect();
    return [x + ((event.clientX - r.left) / r.width) * w, y + ((event.clientY - r.top) / r.height) * h];
  };
  svg.addEventListener("wheel", (event) => {
    if (!event.ctrlKey && !event.metaKey && !event.shiftKey) return; // plain wheel scrolls the page
    event.preventDefault();
    zoom(svg, event.deltaY > 0 ? 1.15 : 0.87, ...toGraph(event));
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.target.closest("a")) return; // a node is a link
    drag = { x: event.clientX, y: event.clientY, vb: viewBox(svg) };
    svg.setPointerCapture(event.pointerId);
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const r = svg.getBoundingClientRect(); const [x, y, w, h] = drag.vb;
    set(svg, [x - ((event.clientX - drag.x) / r.width) * w, y - ((event.clientY - drag.y) / r.height) * h, w, h]);
  });
  svg.addEventListener("pointerup", () => { drag = null; });
  svg.tabIndex = 0; // the keyboard pans with the arrows and zooms with + and -
  svg.addEventListener("keydown", (event) => {
    const [x, y, w, h] = viewBox(svg); const step = w / 10;
    const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    if (moves[event.key]) { event.preventDefault(); set(svg, [x + moves[event.key][0], y + moves[event.key][1], w, h]); }
    else if (event.key === "+" || event.key === "=") zoom(svg, 0.8, x + w / 2, y + h / 2);
    else if (event.key === "-") zoom(svg, 1.25, x + w / 2, y + h / 2);
    else if (event.key === "0") { views.delete(svg.id); svg.setAttribute("viewBox", svg.dataset.full); }
  });
}

function all() { for (const box of document.querySelectorAll(".graph-box[data-graph]")) layOut(box); }
document.addEventListener("DOMContentLoaded", all);
document.addEventListener("htmx:afterSwap", all);
window.sparkmarkGraph = { layOut: all };
