// The visual job editor: a palette of Glue's node types, a React Flow canvas, a form per
// node built from the model the server sends (botocore's Glue model), the problems the
// server finds shown on their nodes, the generated script, save, run and data preview.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import {
  ReactFlow,
  ReactFlowProvider,
  Background,
  Controls,
  Handle,
  Position,
  addEdge,
  applyEdgeChanges,
  applyNodeChanges,
  useReactFlow,
} from "@xyflow/react";
import dagre from "@dagrejs/dagre";
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { sql } from "@codemirror/lang-sql";
import "@xyflow/react/dist/style.css";
import "./studio.css";

const root = document.getElementById("studio");
const JOB = root.dataset.job;
const CSRF = root.dataset.csrf;
const API = `/studio/api/jobs/${encodeURIComponent(JOB)}`;
const FINAL = ["SUCCEEDED", "FAILED", "STOPPED", "TIMEOUT", "ERROR"];
const NODE_W = 220;
const NODE_H = 76;
const FIT = { maxZoom: 1, padding: 0.2 };

async function call(url, method = "GET", body) {
  const headers = { "Content-Type": "application/json", "X-CSRF-Token": CSRF };
  const answer = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await answer.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    data = { problems: [{ node: null, message: `the console answered ${answer.status}` }] };
  }
  return { ok: answer.ok, data };
}

// Dagre lays out an imported graph left to right.
function layout(nodes, edges) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 30, ranksep: 70 });
  g.setDefaultEdgeLabel(() => ({}));
  nodes.forEach((n) => g.setNode(n.id, { width: NODE_W, height: NODE_H }));
  edges.forEach((e) => g.setEdge(e.source, e.target));
  dagre.layout(g);
  return nodes.map((n) => {
    const p = g.node(n.id);
    return { ...n, position: { x: p.x - NODE_W / 2, y: p.y - NODE_H / 2 } };
  });
}

// Glue's node map → React Flow nodes and edges (Inputs become edges).
function fromGlue(map, model) {
  const nodes = Object.entries(map).map(([id, wrapped]) => {
    const [kind, spec] = Object.entries(wrapped)[0];
    return { id, type: "glue", position: { x: 0, y: 0 }, data: { kind, spec, category: model.types[kind]?.category } };
  });
  const edges = [];
  nodes.forEach((n) => (n.data.spec.Inputs || []).forEach((from) => edges.push(edge(from, n.id))));
  return { nodes: layout(nodes, edges), edges };
}

function edge(source, target) {
  return { id: `${source}->${target}`, source, target };
}

// React Flow's nodes and edges → Glue's node map, Inputs in the order edges were drawn.
function toGlue(nodes, edges, model) {
  const map = {};
  nodes.forEach((n) => {
    const spec = { ...n.data.spec };
    if (model.types[n.data.kind]?.fields.Inputs) spec.Inputs = edges.filter((e) => e.target === n.id).map((e) => e.source);
    map[n.id] = { [n.data.kind]: spec };
  });
  return map;
}

function GlueNode({ id, data, selected }) {
  const { kind, spec, category, problems = [], runState } = data;
  const classes = ["glue-node", `cat-${category}`, selected ? "selected" : "", problems.length ? "has-problems" : ""];
  return (
    <div className={classes.join(" ")} data-kind={kind} data-run-state={runState || ""}>
      {category !== "source" && <Handle type="target" position={Position.Left} />}
      <div className="kind">{kind}</div>
      <div className="title">{spec.Name || id}</div>
      {runState && <div className={`run s-${runState.toLowerCase()}`}>{runState}</div>}
      {problems.length > 0 && (
        <ul className="node-problems">
          {problems.map((p, i) => (
            <li key={i}>{p.replace(/^job '[^']*': node \S+ \([^)]*\)[: ]*/, "")}</li>
          ))}
        </ul>
      )}
      {category !== "target" && <Handle type="source" position={Position.Right} />}
    </div>
  );
}

const nodeTypes = { glue: GlueNode };

// A code editor (CodeMirror): the generated script read-only; CustomCode's Code and
// SparkSQL's SqlQuery editable.
function CodeEditor({ value, onChange, language, readOnly = false, id, label }) {
  const host = useRef(null);
  const view = useRef(null);
  const changed = useRef(onChange);
  changed.current = onChange;
  useEffect(() => {
    const extensions = [
      lineNumbers(),
      drawSelection(),
      highlightActiveLine(),
      history(),
      indentOnInput(),
      bracketMatching(),
      syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
      keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
      language === "sql" ? sql() : python(),
      EditorView.lineWrapping,
      EditorState.readOnly.of(readOnly),
      EditorView.editable.of(!readOnly),
      EditorView.contentAttributes.of({ "aria-label": label || "code" }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged && changed.current) changed.current(u.state.doc.toString());
      }),
    ];
    view.current = new EditorView({ parent: host.current, state: EditorState.create({ doc: value || "", extensions }) });
    host.current.editorView = view.current; // for tests and the browser's console: the editor's whole text
    return () => view.current.destroy();
  }, [language, readOnly]);
  useEffect(() => {
    const v = view.current;
    if (v && (value || "") !== v.state.doc.toString()) {
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value || "" } });
    }
  }, [value]);
  return <div className="code-editor" id={id} data-language={language} ref={host} />;
}

// Browse the configured storage (the project's folder, sparkmark's home, S3) for a path.
function PathBrowser({ start, onPick, onClose }) {
  const [at, setAt] = useState(null);
  const [problem, setProblem] = useState(null);
  const open = async (path) => {
    const { ok, data } = await call(`/studio/api/browse?path=${encodeURIComponent(path)}`);
    if (ok) {
      setAt(data);
      setProblem(null);
    } else setProblem(data.problems?.[0]?.message || "cannot list");
  };
  useEffect(() => {
    const folder = start && !start.endsWith("/") && start.includes("/") ? start.slice(0, start.lastIndexOf("/") + 1) : start;
    open(folder || "").catch(() => open(""));
  }, []);
  return (
    <div className="path-browser" role="dialog" aria-label="choose a path">
      <div className="browser-head">
        <strong>{at?.path || "Storage"}</strong>
        <button type="button" onClick={onClose} aria-label="close">×</button>
      </div>
      {problem && <p className="error">{problem}</p>}
      <ul>
        {at && at.parent !== null && (
          <li><button type="button" className="entry up" onClick={() => open(at.parent)}>↑ up</button></li>
        )}
        {at?.entries.map((e) => (
          <li key={e.path}>
            <button type="button" className={`entry ${e.dir ? "dir" : "file"}`} data-path={e.path}
              onClick={() => (e.dir ? open(e.path) : onPick(e.path))}>
              {e.name}{e.dir ? "/" : ""}
            </button>
          </li>
        ))}
      </ul>
      {at?.more && <p className="muted">Only the first entries are shown.</p>}
      {at?.path && <button type="button" id="browse-choose" onClick={() => onPick(at.path)}>Choose this folder</button>}
    </div>
  );
}

function PathInput({ value, onChange, name }) {
  const [browsing, setBrowsing] = useState(false);
  return (
    <span className="path-input">
      <input value={value ?? ""} placeholder="s3://bucket/prefix/ or a folder" aria-label={name}
        onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value)} />
      <button type="button" className="browse" onClick={() => setBrowsing(true)}>Browse…</button>
      {browsing && (
        <PathBrowser start={value || ""} onClose={() => setBrowsing(false)}
          onPick={(p) => { onChange(p); setBrowsing(false); }} />
      )}
    </span>
  );
}

const isPathField = (name) => /(^|[a-z])Paths?$/.test(name) || name === "Path";
const CODE_FIELDS = { Code: "python", SqlQuery: "sql" };

function Label({ name, field }) {
  return (
    <span className="field-name" title={(field.doc || "").replace(/<[^>]+>/g, "")}>
      {name}
      {field.required ? " *" : ""}
    </span>
  );
}

// A list the form edits item by item: one row each, removed with its button, and an
// "add" button for a new item (``blank``).
function ItemsField({ name, field, value, onChange, kind, row, blank, children }) {
  const items = Array.isArray(value) ? value : [];
  const set = (next) => onChange(next.length ? next : undefined);
  return (
    <fieldset className={`field ${kind}`} data-field={name}>
      <legend><Label name={name} field={field} /></legend>
      {items.map((item, i) => (
        <div className={row} key={i}>
          {children(item, i, (v) => set(items.map((x, j) => (j === i ? v : x))))}
          <button type="button" className="remove" aria-label={`remove ${name} ${i + 1}`} onClick={() => set(items.filter((_, j) => j !== i))}>−</button>
        </div>
      ))}
      <button type="button" className="add" onClick={() => set([...items, blank])}>+ add</button>
    </fieldset>
  );
}

// A list of strings (Paths, PartitionKeys, …); a path has its browser.
function ListField({ name, field, value, onChange }) {
  return (
    <ItemsField name={name} field={field} value={value} onChange={onChange} kind="list-field" row="row" blank="">
      {(item, i, put) =>
        isPathField(name) ? (
          <PathInput name={`${name} ${i + 1}`} value={item} onChange={(v) => put(v ?? "")} />
        ) : (
          <input value={item ?? ""} aria-label={`${name} ${i + 1}`} onChange={(e) => put(e.target.value)} />
        )
      }
    </ItemsField>
  );
}

// A map of strings: key and value rows.
function KeyValueField({ name, field, value, onChange }) {
  const [rows, setRows] = useState(() => Object.entries(value || {}));
  useEffect(() => setRows(Object.entries(value || {})), [JSON.stringify(value || {})]);
  const emit = (next) => {
    setRows(next);
    const map = Object.fromEntries(next.filter(([k]) => k !== ""));
    onChange(Object.keys(map).length ? map : undefined);
  };
  return (
    <fieldset className="field kv-field" data-field={name}>
      <legend><Label name={name} field={field} /></legend>
      {rows.map(([k, v], i) => (
        <div className="row" key={i}>
          <input value={k} placeholder="key" aria-label={`${name} key ${i + 1}`} onChange={(e) => emit(rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r)))} />
          <input value={v ?? ""} placeholder="value" aria-label={`${name} value ${i + 1}`} onChange={(e) => emit(rows.map((r, j) => (j === i ? [r[0], e.target.value] : r)))} />
          <button type="button" className="remove" aria-label={`remove ${name} ${i + 1}`} onClick={() => emit(rows.filter((_, j) => j !== i))}>−</button>
        </div>
      ))}
      <button type="button" className="add" onClick={() => setRows([...rows, ["", ""]])}>+ add option</button>
    </fieldset>
  );
}

// A structure: its own fields, folded until opened (or while it has values).
function StructField({ name, field, value, onChange, opened = false }) {
  const spec = value || {};
  const set = (key, v) => {
    const next = { ...spec };
    if (v === undefined) delete next[key];
    else next[key] = v;
    onChange(Object.keys(next).length ? next : undefined);
  };
  return (
    <details className="field struct-field" data-field={name} open={opened || Object.keys(spec).length > 0}>
      <summary><Label name={name} field={field} /></summary>
      {Object.entries(field.fields).map(([k, f]) => (
        <Field key={k} name={k} field={f} value={spec[k]} onChange={(v) => set(k, v)} />
      ))}
    </details>
  );
}

// A list of structures (a mapping, output schemas, …): one group of fields per item.
function StructListField({ name, field, value, onChange }) {
  return (
    <ItemsField name={name} field={field} value={value} onChange={onChange} kind="struct-list-field" row="struct-item" blank={{}}>
      {(item, i, put) => (
        <StructField name={`${name} ${i + 1}`} field={{ ...field.member, required: false }} value={item} opened
          onChange={(v) => put(v || {})} />
      )}
    </ItemsField>
  );
}

// Anything else the model holds is edited as JSON, checked as typed (empty, not "null").
function JsonField({ name, field, value, onChange }) {
  const shown = (v) => (v === undefined || v === null ? "" : JSON.stringify(v, null, 1));
  const [text, setText] = useState(() => shown(value));
  const [bad, setBad] = useState(null);
  useEffect(() => setText(shown(value)), [value]);
  return (
    <label className="field" data-field={name}>
      <Label name={name} field={field} /> <span className="muted">(JSON)</span>
      <textarea
        rows={Math.min(8, Math.max(2, text.split("\n").length))}
        value={text}
        placeholder={field.type === "list" ? "[ … ]" : "{ … }"}
        onChange={(e) => {
          setText(e.target.value);
          if (e.target.value.trim() === "") {
            setBad(null);
            onChange(undefined);
            return;
          }
          try {
            const parsed = JSON.parse(e.target.value);
            setBad(null);
            onChange(parsed === null ? undefined : parsed);
          } catch (err) {
            setBad("not JSON yet");
          }
        }}
      />
      {bad && <span className="error">{bad}</span>}
    </label>
  );
}

function Field({ name, field, value, onChange }) {
  const label = <Label name={name} field={field} />;
  if (field.enum.length) {
    return (
      <label className="field" data-field={name}>
        {label}
        <select value={value ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
          <option value="">(not set)</option>
          {field.enum.map((v) => (
            <option key={v} value={v}>
              {v}
            </option>
          ))}
        </select>
      </label>
    );
  }
  if (field.type === "boolean") {
    return (
      <label className="field inline-field" data-field={name}>
        <input type="checkbox" checked={!!value} onChange={(e) => onChange(e.target.checked)} />
        {label}
      </label>
    );
  }
  if (field.type === "string" && CODE_FIELDS[name]) {
    return (
      <div className="field code-field" data-field={name}>
        {label}
        <CodeEditor value={value ?? ""} language={CODE_FIELDS[name]} label={name} id={`code-${name}`}
          onChange={(v) => onChange(v === "" ? undefined : v)} />
      </div>
    );
  }
  if (field.type === "string") {
    return (
      <label className="field" data-field={name}>
        {label}
        {isPathField(name) ? (
          <PathInput name={name} value={value} onChange={onChange} />
        ) : (
          <input value={value ?? ""} onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value)} />
        )}
      </label>
    );
  }
  if (["integer", "long", "double", "float"].includes(field.type)) {
    return (
      <label className="field" data-field={name}>
        {label}
        <input type="number" value={value ?? ""} onChange={(e) => onChange(e.target.value === "" ? undefined : Number(e.target.value))} />
      </label>
    );
  }
  if (field.type === "list" && field.member?.type === "string" && !field.member.enum.length) {
    return <ListField name={name} field={field} value={value} onChange={onChange} />;
  }
  if (field.type === "list" && field.member?.type === "structure" && field.member.fields) {
    return <StructListField name={name} field={field} value={value} onChange={onChange} />;
  }
  if (field.type === "map" && field.key?.type === "string" && field.value?.type === "string") {
    return <KeyValueField name={name} field={field} value={value} onChange={onChange} />;
  }
  if (field.type === "structure" && field.fields) {
    return <StructField name={name} field={field} value={value} onChange={onChange} />;
  }
  return <JsonField name={name} field={field} value={value} onChange={onChange} />;
}

// Glue Studio's one "Amazon S3" source with a data format to pick: Glue's API has a
// node type per format, so picking a format changes the node's type (keeping the
// fields both types have).
const S3_FORMATS = { S3CsvSource: "CSV", S3JsonSource: "JSON", S3ParquetSource: "Parquet" };

function Properties({ node, model, onChange, onKind }) {
  if (!node) return <p className="muted">Select a node to edit its fields.</p>;
  const fields = model.types[node.data.kind].fields;
  const names = ["Name", ...Object.keys(fields).filter((f) => f !== "Name" && f !== "Inputs")];
  return (
    <div className="properties" data-node={node.id}>
      <h3>
        {node.data.kind} <span className="muted">{node.id}</span>
      </h3>
      {S3_FORMATS[node.data.kind] && (
        <label className="field" data-field="data-format">
          <span className="field-name">Data format</span>
          <select id="data-format" value={node.data.kind} onChange={(e) => onKind(node.id, e.target.value)}>
            {Object.entries(S3_FORMATS).filter(([k]) => model.types[k]).map(([k, label]) => (
              <option key={k} value={k}>{label}</option>
            ))}
          </select>
        </label>
      )}
      {names.map((f) => (
        <Field key={`${node.id}-${f}`} name={f} field={fields[f]} value={node.data.spec[f]} onChange={(v) => onChange(node.id, f, v)} />
      ))}
    </div>
  );
}

// What the selected node outputs on a sample of its sources (the server's preview):
// [result, busy, compute]; the result is forgotten when another node is selected.
function useSample(node, nodes, edges, model) {
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => setResult(null), [node?.id]);
  const compute = async () => {
    setBusy(true);
    const { ok, data } = await call(`${API}/preview`, "POST", { nodes: toGlue(nodes, edges, model), node: node.id });
    setBusy(false);
    setResult(ok ? data : { problems: data.problems || [] });
  };
  return [result, busy, compute];
}

function Preview({ node, nodes, edges, model }) {
  const [result, busy, run] = useSample(node, nodes, edges, model);
  if (!node) return <p className="muted">Select a node to preview its data.</p>;
  return (
    <div className="preview">
      <button id="preview-run" onClick={run} disabled={busy}>
        {busy ? "Computing on a sample…" : `Preview ${node.data.spec.Name || node.id}`}
      </button>
      {result?.problems?.length > 0 && (
        <ul className="problems">
          {result.problems.map((p, i) => (
            <li key={i}>{p.message}</li>
          ))}
        </ul>
      )}
      {result?.columns && (
        <table id="preview-table">
          <thead>
            <tr>
              {result.columns.map(([c, t]) => (
                <th key={c}>
                  {c}
                  <br />
                  <span className="muted">{t}</span>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {result.rows.map((r, i) => (
              <tr key={i}>
                {r.map((v, j) => (
                  <td key={j}>{v === null ? <span className="null">NULL</span> : String(v)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

// A node's output schema, computed on a sample of its sources as preview does.
function Schema({ node, nodes, edges, model }) {
  const [result, busy, run] = useSample(node, nodes, edges, model);
  if (!node) return <p className="muted">Select a node to see the schema it outputs.</p>;
  return (
    <div className="schema">
      <button id="schema-run" onClick={run} disabled={busy}>
        {busy ? "Computing on a sample…" : `Output schema of ${node.data.spec.Name || node.id}`}
      </button>
      {result?.problems?.length > 0 && (
        <ul className="problems">{result.problems.map((p, i) => <li key={i}>{p.message}</li>)}</ul>
      )}
      {result?.columns && (
        <table id="schema-table">
          <thead><tr><th>Column</th><th>Type</th></tr></thead>
          <tbody>
            {result.columns.map(([c, t]) => (
              <tr key={c} data-column={c}><td>{c}</td><td><code>{t}</code></td></tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function Editor({ model, initial }) {
  const [nodes, setNodes] = useState(initial.nodes);
  const [edges, setEdges] = useState(initial.edges);
  const [selected, setSelected] = useState(null);
  const [tab, setTab] = useState("properties");
  const [problems, setProblems] = useState([]);
  const [script, setScript] = useState(null);
  const [status, setStatus] = useState(initial.saved ? "saved" : "new, not saved");
  const [run, setRun] = useState(initial.run);
  const counter = useRef(Date.now());
  const flow = useReactFlow();

  const glue = useMemo(() => toGlue(nodes, edges, model), [nodes, edges, model]);

  // Check and generate on every change (debounced): problems go onto their nodes.
  useEffect(() => {
    if (!nodes.length) {
      setProblems([]);
      setScript(null);
      return undefined;
    }
    const timer = setTimeout(async () => {
      const { data } = await call(`${API}/check`, "POST", { nodes: glue });
      setProblems(data.problems || []);
      setScript(data.script || null);
    }, 250);
    return () => clearTimeout(timer);
  }, [glue]);

  // Follow the latest run until it ends.
  useEffect(() => {
    if (!run || FINAL.includes(run.state)) return undefined;
    const timer = setInterval(async () => {
      const { data } = await call(`${API}/runs/latest`);
      if (data.run) setRun(data.run);
    }, 1000);
    return () => clearInterval(timer);
  }, [run]);

  const shown = useMemo(
    () =>
      nodes.map((n) => ({
        ...n,
        data: {
          ...n.data,
          problems: problems.filter((p) => p.node === n.id).map((p) => p.message),
          runState: run ? run.state : null,
        },
      })),
    [nodes, problems, run],
  );

  const add = useCallback(
    (kind, position) => {
      counter.current += 1;
      const id = `node-${counter.current}`;
      const count = nodes.length;
      const where = position || { x: 40 + (count % 4) * (NODE_W + 60), y: 40 + Math.floor(count / 4) * (NODE_H + 60) };
      const node = { id, type: "glue", position: where, data: { kind, spec: { Name: kind }, category: model.types[kind].category } };
      setNodes((ns) => [...ns.map((n) => ({ ...n, selected: false })), { ...node, selected: true }]);
      setSelected(id);
      setTab("properties");
      setTimeout(() => flow.fitView(FIT), 60); // keep every node in sight
    },
    [nodes, model, flow],
  );

  const change = (id, field, value) =>
    setNodes((ns) =>
      ns.map((n) => {
        if (n.id !== id) return n;
        const spec = { ...n.data.spec };
        if (value === undefined) delete spec[field];
        else spec[field] = value;
        return { ...n, data: { ...n.data, spec } };
      }),
    );

  const changeKind = (id, kind) =>
    setNodes((ns) =>
      ns.map((n) => {
        if (n.id !== id) return n;
        const fields = model.types[kind].fields;
        const spec = Object.fromEntries(Object.entries(n.data.spec).filter(([k]) => k in fields));
        if (spec.Name === n.data.kind) spec.Name = kind; // a default name follows the type
        return { ...n, data: { ...n.data, kind, spec, category: model.types[kind].category } };
      }),
    );

  const save = async () => {
    setStatus("saving…");
    const { ok, data } = await call(API, "PUT", { nodes: glue });
    if (ok) setStatus("saved");
    else {
      setProblems(data.problems || []);
      setStatus(`not saved: ${(data.problems || []).length} problem(s)`);
    }
    return ok;
  };

  const start = async () => {
    if (!(await save())) return;
    const { ok, data } = await call(`${API}/run`, "POST", {});
    if (ok) setRun({ id: data.run_id, state: "WAITING" });
    else setStatus(`not started: ${data.problems?.[0]?.message || "error"}`);
  };

  const onDrop = (event) => {
    event.preventDefault();
    const kind = event.dataTransfer.getData("application/x-glue-node");
    if (kind) add(kind, flow.screenToFlowPosition({ x: event.clientX, y: event.clientY }));
  };

  const current = nodes.find((n) => n.id === selected) || null;
  const groups = ["source", "transform", "target"];
  return (
    <div className="studio-editor">
      <div className="toolbar">
        <button id="save" onClick={save}>
          Save
        </button>
        <button id="run" onClick={start} disabled={!nodes.length}>
          Save and run
        </button>
        <span id="status" className="muted">
          {status}
        </span>
        {run && (
          <span id="run-state" className={`state s-${run.state.toLowerCase()}`} data-state={run.state}>
            {run.state}
          </span>
        )}
        {run && FINAL.includes(run.state) && (
          <a href={`/runs/${run.id}`} id="run-link">
            the run
          </a>
        )}
        <span id="problem-count" className={problems.length ? "error" : "muted"} data-count={problems.length}>
          {problems.length ? `${problems.length} problem(s)` : nodes.length ? "no problems" : ""}
        </span>
      </div>
      <div className="panes">
        <aside className="palette" id="palette">
          {groups.map((g) => (
            <div key={g}>
              <h4>{g}s</h4>
              {Object.entries(model.types)
                .filter(([, t]) => t.category === g)
                .map(([kind]) => (
                  <div
                    key={kind}
                    className={`palette-item cat-${g}`}
                    data-kind={kind}
                    draggable
                    onDragStart={(e) => e.dataTransfer.setData("application/x-glue-node", kind)}
                    onClick={() => add(kind)}
                    title="Click to add, or drag onto the canvas"
                  >
                    {kind}
                  </div>
                ))}
            </div>
          ))}
        </aside>
        <div className="canvas" onDrop={onDrop} onDragOver={(e) => e.preventDefault()}>
          <ReactFlow
            nodes={shown}
            edges={edges}
            nodeTypes={nodeTypes}
            onNodesChange={(c) => setNodes((ns) => applyNodeChanges(c, ns))}
            onEdgesChange={(c) => setEdges((es) => applyEdgeChanges(c, es))}
            onConnect={(c) => setEdges((es) => addEdge(edge(c.source, c.target), es))}
            onSelectionChange={({ nodes: picked }) => picked.length && setSelected(picked[0].id)}
            fitView
            fitViewOptions={FIT}
            defaultViewport={{ x: 0, y: 0, zoom: 1 }}
          >
            <Background />
            <Controls />
          </ReactFlow>
        </div>
        <aside className="side">
          <div className="tabs">
            {["properties", "schema", "script", "preview"].map((t) => (
              <button key={t} className={tab === t ? "on" : ""} id={`tab-${t}`} onClick={() => setTab(t)}>
                {t}
              </button>
            ))}
          </div>
          {tab === "properties" && <Properties node={current} model={model} onChange={change} onKind={changeKind} />}
          {tab === "schema" && <Schema node={current} nodes={nodes} edges={edges} model={model} />}
          {tab === "script" &&
            (script ? (
              <CodeEditor value={script} language="python" readOnly id="script" label="generated script" />
            ) : (
              <p className="muted" id="script">The script appears once the graph has no problems.</p>
            ))}
          {tab === "preview" && <Preview node={current} nodes={nodes} edges={edges} model={model} />}
          {problems.length > 0 && (
            <ul className="problems" id="problems">
              {problems.map((p, i) => (
                <li key={i}>{p.message}</li>
              ))}
            </ul>
          )}
        </aside>
      </div>
    </div>
  );
}

async function main() {
  const [model, job] = await Promise.all([call("/studio/api/model"), call(API)]);
  const initial = { ...fromGlue(job.data.nodes || {}, model.data), saved: job.data.saved, run: job.data.run };
  createRoot(root).render(
    <ReactFlowProvider>
      <Editor model={model.data} initial={initial} />
    </ReactFlowProvider>,
  );
}

main();
