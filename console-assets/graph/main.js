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

function draw(svg, g) {
  const w = Number(svg.dataset.nodeW), h = Number(svg.dataset.nodeH);
  for (const node of svg.querySelectorAll("g.node")) {
    const p = g.node(node.dataset.id);
    node.setAttribute("transform", `translate(${Math.round(p.x - w / 2)},${Math.round(p.y - h / 2)})`);
  }
  for (const edge of svg.querySelectorAll("path.edge")) {
    const e = g.edge(edge.dataset.source, edge.dataset.target);
    if (!e) continue;
    const pts = e.points;
    let d = `M${pts[0].x},${pts[0].y}`;
    for (let i = 1; i < pts.length; i += 1) d += ` L${pts[i].x},${pts[i].y}`;
    edge.setAttribute("d", d);
  }
  const { width, height } = g.graph();
  svg.dataset.full = `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`;
}

function layOut(box) {
  const svg = box.querySelector("svg.graph");
  if (!svg || svg.dataset.laidOut) return;
  const room = Math.max(box.clientWidth - 20, 320);
  // Left to right, as Glue draws workflows, unless top to bottom shows the nodes larger.
  const across = place(svg, "LR"), down = place(svg, "TB");
  const scale = (gr) => Math.min(1, room / gr.graph().width, 640 / gr.graph().height);
  const chosen = scale(down) > scale(across) * 1.25 ? down : across;
  draw(svg, chosen);
  svg.dataset.layout = chosen === down ? "TB" : "LR";
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
