// evalband console: the operator's page of a robot session.
//
// Everything shown comes from the server's state snapshots (GET /api/state, then over the
// WebSocket /ws); every button sends one event (POST /api/act) carrying the revision the
// page last saw, and the page changes only on the server's answer or its next snapshot: a
// confirmed score is stored before the page shows the next trial. Camera frames arrive as
// binary WebSocket messages (4-byte header length, JSON header, JPEG); the page acknowledges
// each frame it drew. No policy name is ever sent here while a session is blinded.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const MOVING = ["staging", "running", "stress", "returning"];
  let snap = null;          // the latest snapshot (by revision)
  let pending = false;      // an event is on its way
  let ws = null;
  let view = "live";        // live | reference | blend | difference
  let live = null;          // the latest frame (ImageBitmap) and its header
  let liveHeader = null;
  let ref = null;           // the scene's reference frame (Image) and its URL
  let refUrl = null;
  let drawing = false;      // drawing the alignment region
  let drag = null;          // [x0, y0, x1, y1] while dragging (fractions)

  // The token came in the URL; the server answered with a cookie: keep it out of the
  // address bar (screenshots, history).
  if (new URLSearchParams(location.search).has("token")) {
    history.replaceState(null, "", location.pathname);
  }

  function apply(state) {
    if (!state || typeof state.rev !== "number") return;
    if (snap && state.rev < snap.rev) return;
    snap = state;
    if (snap.reference !== refUrl) loadReference(snap.reference);
    render();
  }

  function showError(text) {
    const el = $("error");
    el.hidden = !text;
    el.textContent = text || "";
  }

  async function act(action, extra) {
    if (!snap) return;
    const always = action === "abort" || action === "capture";
    if (pending && !always) return;
    if (!always) { pending = true; render(); }
    try {
      const response = await fetch("/api/act", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        credentials: "same-origin",
        body: JSON.stringify(Object.assign({ action: action, rev: snap.rev }, extra || {})),
      });
      const answer = await response.json();
      if (answer.state) apply(answer.state);
      showError(answer.ok ? null : answer.error);
    } catch (err) {
      showError("no answer from the console (" + err + "); it retries when it is back");
    } finally {
      if (!always) { pending = false; render(); }
    }
  }

  function button(label, action, options) {
    const b = document.createElement("button");
    const o = options || {};
    b.type = "button";
    b.textContent = label;
    b.dataset.action = action;
    if (o.cls) b.className = o.cls;
    if (o.score !== undefined) b.dataset.score = String(o.score);
    if (o.pressed !== undefined) b.setAttribute("aria-pressed", String(o.pressed));
    b.disabled = Boolean(o.disabled);
    b.addEventListener("click", o.onClick || (() => act(action, o.extra)));
    return b;
  }

  function text(id, value, cls) {
    const el = $(id);
    el.textContent = value || "";
    if (cls !== undefined) el.className = cls;
  }

  function render() {
    if (!snap) return;
    const s = snap.state;
    const info = snap.session || {};
    const n = info.n_trials || (s.counts ? s.counts.total : 0);
    const counts = s.counts || { scored: 0, skipped: 0, pending: 0, total: n };
    const done = counts.scored + counts.skipped;
    const phase = s.phase;
    const moving = MOVING.includes(phase) || snap.busy;
    text("sid", "session " + info.session_id + " · " + (info.robot || ""));
    text("progress", done + "/" + n);
    if (phase === "finished") {
      text("trial-title", "session " + info.session_id + " complete: " + done + " of " + n +
        " trials recorded (" + counts.scored + " scored, " + counts.skipped + " skipped)");
      text("trial-policy", "next: evalband session analyze " + info.session_id, "hint");
    } else {
      text("trial-title", "trial " + (s.trial + 1) + " of " + n + " · scene " + s.scene +
        " of " + info.scenes + " · attempt " + s.attempt + " of " + info.attempts);
      text("trial-policy", "policy: " + s.label + " · scene start state: " +
        (s.captured ? "captured" : "not captured yet (a seeding rollout)"), "");
    }
    text("trial-progress", "progress: " + done + " of " + n + " done (" + counts.scored +
      " scored, " + counts.skipped + " skipped) · " + phase);
    text("message", s.message === "ready" ? "" : s.message);
    renderPrimary(s, moving);
    renderScores(s, info, moving);
    const can = ["scoring", "idle", "ready", "aborted"].includes(phase) && !moving;
    $("assist").disabled = !can || pending;
    $("assist").setAttribute("aria-pressed", String(Boolean(s.assisted)));
    $("assist").textContent = s.assisted ? "Assisted: yes" : "Assisted: no";
    $("note-open").disabled = !can || pending;
    $("note-open").textContent = s.note ? "Note: " + s.note : "Note";
    $("skip").disabled = !["scoring", "idle", "aborted"].includes(phase) || moving || pending;
    $("undo").disabled = moving || pending || done === 0;
    text("last-line", s.last ? "last: " + s.last : "");
    const warnings = $("warnings");
    warnings.replaceChildren(...(s.warnings || []).map((w) => {
      const li = document.createElement("li");
      li.textContent = "WARNING " + w;
      return li;
    }));
    const about = [
      info.policies + " policies x " + info.scenes + " scenes x " + info.attempts +
        " attempts = " + n + " trials, " + (info.blind ? "blinded (codes, not names)" :
        "not blinded"),
      "rubric: " + info.rubric_text,
      ...(info.instrument || []).map((line) => "instrument: " + line),
    ];
    const warm = Object.entries(info.warmup_ms || {});
    if (warm.length) {
      about.push("warm-up calls: " + warm.map(([k, v]) => k + " " + Math.round(v) + " ms")
        .join(" · "));
    }
    if (info.resumed) about.push("resuming: " + info.resumed + " of " + n +
      " trials already recorded when this console started");
    if (info.operator === "suggested") about.push("rehearsal: every machine suggestion is " +
      "accepted and stored as such (operator 'suggested')");
    $("about-lines").replaceChildren(...about.map((line) => {
      const li = document.createElement("li");
      li.textContent = line;
      return li;
    }));
    renderCamera();
  }

  function renderPrimary(s, moving) {
    const box = $("primary");
    const items = [];
    const phase = s.phase;
    if (phase === "idle") {
      items.push(button("Stage trial " + (s.trial + 1) + " (the arm moves)", "next",
        { cls: "primary", disabled: pending }));
    } else if (phase === "ready") {
      items.push(button("Start the policy", "next", { cls: "primary", disabled: pending }));
    } else if (phase === "aborted") {
      items.push(button("Replay the trial (the arm moves)", "next",
        { cls: "primary", disabled: pending }));
    } else if (moving) {
      if (phase === "running" && !s.captured) {
        items.push(button("Capture the start state", "capture", { cls: "primary" }));
      }
      items.push(button("Abort (no more actions, robot made safe)", "abort",
        { cls: "danger" }));
    } else if (phase === "scoring") {
      const chosen = s.chosen;
      const score = chosen !== null && chosen !== undefined ? chosen : s.suggestion;
      const label = chosen !== null && chosen !== undefined ?
        "Confirm score " + chosen :
        (s.suggestion !== null && s.suggestion !== undefined ?
          "Accept the suggestion " + s.suggestion : "Choose a score");
      items.push(button(label, "confirm", {
        cls: "primary",
        disabled: pending || score === null || score === undefined,
        extra: { score: score },
      }));
    }
    box.replaceChildren(...items);
  }

  function renderScores(s, info, moving) {
    const box = $("scores");
    if (s.phase !== "scoring" || moving) {
      box.replaceChildren();
      return;
    }
    const levels = Object.entries(info.rubric || {});
    box.replaceChildren(...levels.map(([k, label]) => {
      const value = Number(k);
      const b = button(k + " — " + label, "score", {
        score: value,
        pressed: s.chosen === value,
        disabled: pending,
        extra: { score: value },
      });
      if (s.suggestion === value) b.classList.add("suggested");
      return b;
    }));
  }

  // -- the camera ---------------------------------------------------------------------------

  function loadReference(url) {
    refUrl = url;
    ref = null;
    if (!url) { renderCamera(); return; }
    const img = new Image();
    img.onload = () => { if (refUrl === url) { ref = img; renderCamera(); } };
    img.src = url;
  }

  function renderCamera() {
    for (const b of document.querySelectorAll(".views button")) {
      b.setAttribute("aria-pressed", String(b.dataset.view === view));
      b.disabled = b.dataset.view !== "live" && !ref;
    }
    const region = snap && snap.region;
    const phase = snap ? snap.state.phase : "";
    $("draw").disabled = !ref || phase === "finished";
    $("draw").setAttribute("aria-pressed", String(drawing));
    $("draw").textContent = drawing ? "Drag on the picture…" :
      (region ? "Redraw region" : "Draw region");
    $("clear-region").disabled = !region || !ref;
    let note = "";
    if (!ref) note = "no reference frame yet: the scene's seeding rollout captures it";
    else if (!region) note = "alignment over the whole frame: draw a region around the block";
    if (!live) note = (note ? note + "; " : "") + "no camera frame yet";
    text("camera-note", note);
    const a = liveHeader && liveHeader.alignment;
    text("alignment", a === null || a === undefined ? "alignment: –" :
      "alignment: " + a.toFixed(1) + " (mean |live − reference|" +
      (region ? " in the region)" : ")"));
    draw();
  }

  function draw() {
    const canvas = $("canvas");
    const ctx = canvas.getContext("2d");
    const base = live || ref;
    if (!base) return;
    const w = live ? live.width : ref.naturalWidth;
    const h = live ? live.height : ref.naturalHeight;
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    ctx.globalAlpha = 1;
    ctx.globalCompositeOperation = "source-over";
    ctx.filter = "none";
    if (view === "reference" && ref) {
      ctx.drawImage(ref, 0, 0, w, h);
    } else if (view === "blend" && ref && live) {
      ctx.drawImage(ref, 0, 0, w, h);
      ctx.globalAlpha = 0.5;
      ctx.drawImage(live, 0, 0, w, h);
      ctx.globalAlpha = 1;
    } else if (view === "difference" && ref && live) {
      ctx.drawImage(ref, 0, 0, w, h);
      ctx.globalCompositeOperation = "difference";
      ctx.drawImage(live, 0, 0, w, h);
      ctx.globalCompositeOperation = "source-over";
    } else if (live) {
      ctx.drawImage(live, 0, 0, w, h);
    } else {
      ctx.drawImage(ref, 0, 0, w, h);
    }
    const box = drag || (snap && snap.region);
    if (box) {
      ctx.strokeStyle = drag ? "#f9ab00" : "#fdd663";
      ctx.lineWidth = Math.max(1, Math.round(w / 160));
      ctx.strokeRect(box[0] * w, box[1] * h, (box[2] - box[0]) * w, (box[3] - box[1]) * h);
    }
  }

  async function frame(buffer) {
    const size = new DataView(buffer).getUint32(0);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, size)));
    try {
      const blob = new Blob([new Uint8Array(buffer, 4 + size)], { type: "image/jpeg" });
      const bitmap = await createImageBitmap(blob);
      if (live) live.close();
      live = bitmap;
      liveHeader = header;
      renderCamera();
      document.dispatchEvent(new CustomEvent("evalband:frame", { detail: header }));
    } finally {
      if (ws && ws.readyState === WebSocket.OPEN) {
        ws.send(JSON.stringify({ type: "drawn", seq: header.seq }));
      }
    }
  }

  function fraction(event) {
    const rect = $("canvas").getBoundingClientRect();
    const x = Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
    const y = Math.min(1, Math.max(0, (event.clientY - rect.top) / rect.height));
    return [x, y];
  }

  function setDrawing(on) {
    drawing = on;
    drag = null;
    $("canvas").classList.toggle("drawing", on);
    renderCamera();
  }

  function wireCamera() {
    for (const b of document.querySelectorAll(".views button")) {
      b.addEventListener("click", () => { view = b.dataset.view; renderCamera(); });
    }
    $("draw").addEventListener("click", () => setDrawing(!drawing));
    $("clear-region").addEventListener("click", () => {
      act("region", { scene: snap.state.scene, region: null });
    });
    const canvas = $("canvas");
    let start = null;
    canvas.addEventListener("pointerdown", (event) => {
      if (!drawing) return;
      event.preventDefault();
      canvas.setPointerCapture(event.pointerId);
      start = fraction(event);
      drag = [start[0], start[1], start[0], start[1]];
      draw();
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!drawing || !start) return;
      const [x, y] = fraction(event);
      drag = [Math.min(start[0], x), Math.min(start[1], y), Math.max(start[0], x),
        Math.max(start[1], y)];
      draw();
    });
    canvas.addEventListener("pointerup", () => {
      if (!drawing || !start || !drag) return;
      const box = drag;
      start = null;
      setDrawing(false);
      if (box[2] - box[0] > 0.01 && box[3] - box[1] > 0.01) {
        act("region", { scene: snap.state.scene, region: box });
      }
    });
  }

  // -- the connection -----------------------------------------------------------------------

  function setLink(up) {
    const el = $("link");
    el.textContent = up ? "live" : "offline";
    el.className = "link " + (up ? "up" : "down");
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    ws = new WebSocket(scheme + location.host + "/ws");
    ws.binaryType = "arraybuffer";
    ws.onopen = () => {
      setLink(true);
      ws.send(JSON.stringify({ type: "camera", on: true }));
    };
    ws.onmessage = (event) => {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.type === "state") apply(message);
      } else {
        frame(event.data);
      }
    };
    ws.onclose = () => {
      setLink(false);
      setTimeout(connect, 1000);
    };
  }

  function wireActions() {
    for (const id of ["assist", "skip", "undo"]) {
      $(id).addEventListener("click", () => act($(id).dataset.action));
    }
    $("note-open").addEventListener("click", () => {
      const form = $("note-form");
      form.hidden = !form.hidden;
      $("note-text").value = (snap && snap.state.note) || "";
      if (!form.hidden) $("note-text").focus();
    });
    $("note-form").addEventListener("submit", (event) => {
      event.preventDefault();
      $("note-form").hidden = true;
      act("note", { text: $("note-text").value });
    });
    document.addEventListener("keydown", (event) => {
      if (!snap || event.target instanceof HTMLInputElement) return;
      const phase = snap.state.phase;
      if (event.key === "Enter") {
        const first = $("primary").querySelector("button:not(:disabled)");
        if (first) { event.preventDefault(); first.click(); }
      } else if (/^[0-9]$/.test(event.key) && phase === "scoring") {
        act("score", { score: Number(event.key) });
      } else if (event.key === " " && MOVING.includes(phase)) {
        event.preventDefault();
        act("capture");
      } else if ((event.key === "x" || event.key === "Escape") && MOVING.includes(phase)) {
        act("abort");
      } else if (event.key === "u") {
        act("undo");
      } else if (event.key === "s") {
        act("skip");
      } else if (event.key === "a") {
        act("assist");
      }
    });
  }

  async function start() {
    wireActions();
    wireCamera();
    try {
      const response = await fetch("/api/state", { credentials: "same-origin" });
      if (response.ok) apply(await response.json());
      else showError((await response.json()).error);
    } catch (err) {
      showError("the console does not answer (" + err + ")");
    }
    connect();
  }

  start();
})();
