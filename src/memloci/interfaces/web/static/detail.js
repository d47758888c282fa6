// The detail pane: one renderer per kind of record. Each returns a DOM node; actions
// go through `ctx` (api errors, the confirmation modal, reloading, opening other records).

import { api } from "./api.js";
import { graphView } from "./graph.js";
import { fields, fmtTime, fmtUnit, fmtValue, h, section, truncate } from "./dom.js";

export const TAB_OF_TYPE = {
  semantic: "facts",
  opinion: "facts",
  episodic: "episodes",
  procedural: "procedures",
};

const enc = encodeURIComponent;

function header(title, id, ...badges) {
  return h("header", { class: "detail-head" },
    h("h2", { testid: "detail-title" }, title),
    h("code", { class: "id", testid: "detail-id" }, id),
    badges.filter(Boolean).map((b) => h("span", { class: "badge" }, b)));
}

function actions(...buttons) {
  return h("div", { class: "actions detail-actions" }, buttons);
}

function deleteButton(ctx, { what, path, label }) {
  return h("button", {
    type: "button", class: "danger", testid: "delete-button",
    onclick: async () => {
      const ok = await ctx.confirm(`Delete ${what}?`, [label], "Delete");
      if (!ok) return;
      try {
        await api(path, { method: "DELETE" });
        ctx.notice(`Deleted ${what}.`);
        ctx.closeDetail();
        ctx.reloadList();
      } catch (e) {
        ctx.showError(e);
      }
    },
  }, "Delete");
}

function link(text, onclick, testid) {
  return h("a", {
    href: "#", testid,
    onclick: (e) => {
      e.preventDefault();
      onclick();
    },
  }, text);
}

function memoryLink(ctx, node) {
  const tab = TAB_OF_TYPE[node.type] || "facts";
  return h("li", {},
    link(truncate(node.content, 90), () => ctx.open(tab, node.id), "memory-link"),
    " ", h("span", { class: "muted" }, `${node.type} · ${node.id}`));
}

// ------------------------------------------------------------------ memories
function memoryFields(m) {
  const pairs = [
    ["type", m.type], ["category", m.category], ["subject", m.subject], ["key", m.key],
    ["value", m.value], ["fact type", m.fact_type], ["user", m.user], ["agent", m.agent],
    ["session", m.session], ["speaker", m.speaker], ["scope", m.scope],
    ["confidence", fmtUnit(m.confidence)], ["confirmed", m.times_confirmed || ""],
    ["contradicted", m.times_contradicted || ""], ["accessed", m.access_count || ""],
    ["source", [m.source_type, m.source_role].filter(Boolean).join(" / ")],
    ["event time", fmtTime(m.event_time)], ["created", fmtTime(m.created_at)],
    ["updated", fmtTime(m.updated_at)], ["valid until", fmtTime(m.valid_until)],
    ["decay rate", m.decay_rate === 0 ? "0 (protected)" : m.decay_rate],
    ["consolidated", fmtTime(m.consolidated_at)],
    ["metadata", Object.keys(m.metadata || {}).length ? m.metadata : ""],
  ];
  const ep = m.episode;
  if (ep) {
    pairs.push(
      ["trigger", ep.trigger], ["outcome", ep.outcome],
      ["actions", ep.actions ? `${ep.actions.length} step(s)` : ""],
      ["duration", ep.duration_ms != null ? `${Math.round(ep.duration_ms)} ms` : ""],
      ["feedback", ep.feedback],
    );
  }
  const pr = m.procedure;
  if (pr) {
    pairs.push(
      ["procedure type", pr.procedure_type], ["triggers", pr.triggers],
      ["times used", pr.times_used],
      ["success rate", pr.success_rate != null ? `${Math.round(pr.success_rate * 100)} %` : ""],
    );
  }
  return fields(pairs);
}

function versionList(versions) {
  if (!versions || versions.length === 0) {
    return h("p", { class: "muted" }, "No versions recorded.");
  }
  const sorted = [...versions].sort((a, b) => b.version - a.version);
  return h("ol", { class: "versions", testid: "versions" }, sorted.map((v) =>
    h("li", { testid: "version", "data-version": v.version },
      h("span", { class: "badge" }, `v${v.version}`), " ",
      h("span", { class: "muted" }, fmtTime(v.created_at)),
      v.source_session ? h("span", { class: "muted" }, ` · session ${v.source_session}`) : "",
      h("div", { class: "version-content" }, v.content))));
}

async function provenance(ctx, id, into) {
  try {
    const ex = await api(`/api/v1/memories/${enc(id)}/explain`);
    const parts = [];
    if (ex.superseded_by) {
      parts.push(h("p", {}, "Superseded by: ", h("ul", {}, memoryLink(ctx, ex.superseded_by))));
    }
    if (ex.supersedes && ex.supersedes.length) {
      parts.push(h("p", {}, "Supersedes:"), h("ul", {}, ex.supersedes.map((n) => memoryLink(ctx, n))));
    }
    if (ex.sources && ex.sources.length) {
      parts.push(h("p", {}, "Derived from:"), h("ul", {}, ex.sources.map((n) => memoryLink(ctx, n))));
    }
    if (ex.entities && ex.entities.length) {
      parts.push(h("p", {}, "Entities: ", ex.entities.map((e, i) => [
        i ? ", " : "",
        link(e.canonical_name, () => ctx.open("entities", e.id), "entity-link"),
      ])));
    }
    if (ex.edges && ex.edges.length) {
      parts.push(h("p", {}, "Edges:"), h("ul", { class: "edges" }, ex.edges.map((e) =>
        h("li", {}, `${e.source_id} —${e.relation}${e.predicate ? ` (${e.predicate})` : ""}→ ${e.target_id}`))));
    }
    if (parts.length === 0) {
      parts.push(h("p", { class: "muted" },
        `Recorded directly (source: ${ex.memory.source_type}); nothing supersedes it and no ` +
        "episode or entity is linked."));
    }
    into.replaceChildren(...parts);
  } catch (e) {
    into.replaceChildren(h("p", { class: "muted inline-error" },
      `Provenance unavailable: ${e.message}`));
  }
}

// A textarea turns "\r\n" (and a lone "\r") into "\n": compare in that form, so an
// untouched text is not sent back (which would make a new version of the same words).
const lines = (text) => String(text ?? "").replace(/\r\n?/g, "\n");

function editForm(ctx, kind, m, onSaved) {
  const content = h("textarea", { testid: "edit-content", rows: 4, required: true });
  content.value = m.content;
  const category = h("input", { testid: "edit-category", value: m.category || "" });
  const form = h("form", {
    class: "edit-form", testid: "edit-form", hidden: true,
    onsubmit: async (e) => {
      e.preventDefault();
      const body = {};
      if (lines(content.value) !== lines(m.content)) body.content = content.value;
      if (category.value.trim() && category.value.trim() !== m.category) {
        body.category = category.value.trim();
      }
      if (Object.keys(body).length === 0) {
        form.hidden = true;
        return;
      }
      try {
        const res = await api(`/api/v1/${kind}/${enc(m.id)}`, { method: "PATCH", body });
        ctx.notice(res && res.message ? res.message : "Saved.");
        ctx.reloadList();
        onSaved();
      } catch (err) {
        ctx.showError(err);
      }
    },
  },
  h("label", {}, "Content", content),
  m.type === "episodic" ? "" : h("label", {}, "Category", category),
  h("div", { class: "actions" },
    h("button", { type: "button", class: "ghost", onclick: () => { form.hidden = true; } }, "Cancel"),
    h("button", { type: "submit", testid: "edit-save" }, "Save as new version")));
  return form;
}

export async function memoryDetail(ctx, kind, id) {
  const data = await api(`/api/v1/${kind}/${enc(id)}`);
  const m = data.memory;
  const singular = { facts: "Fact", episodes: "Episode", procedures: "Procedure" }[kind];
  const prov = h("div", { testid: "provenance-body" }, h("p", { class: "muted" }, "Loading…"));
  // a forgotten (soft-deleted) memory can no longer change: no Edit, no Delete
  const forgotten = Boolean(m.valid_until);
  const form = forgotten ? "" : editForm(ctx, kind, m, () => ctx.open(kind, m.id, { force: true }));
  const node = h("article", { class: "detail", "data-kind": kind },
    header(singular, m.id, `v${m.version}`, forgotten ? "forgotten" : null),
    h("p", { class: "content", testid: "detail-content" }, m.content),
    forgotten
      ? h("p", { class: "muted", testid: "forgotten-note" },
        `Not current since ${fmtTime(m.valid_until)} (forgotten or superseded): it is out ` +
        "of the lists and search and can no longer be edited; its history is kept.")
      : actions(
        h("button", {
          type: "button", testid: "edit-button",
          onclick: () => {
            form.hidden = !form.hidden;
            if (!form.hidden) form.querySelector("textarea").focus();
          },
        }, "Edit"),
        deleteButton(ctx, {
          what: `this ${singular.toLowerCase()}`, path: `/api/v1/${kind}/${enc(m.id)}`,
          label: truncate(m.content, 120),
        }),
      ),
    form,
    section("Fields", "fields-section", memoryFields(m)),
    section(`History (${data.versions.length} version${data.versions.length === 1 ? "" : "s"})`,
      "history", versionList(data.versions)),
    section("Provenance", "provenance", prov));
  provenance(ctx, m.id, prov);
  return node;
}

// ------------------------------------------------------------------ users
export async function userDetail(ctx, id) {
  const u = await api(`/api/v1/memory-users/${enc(id)}`);
  const ids = Object.entries(u.identifiers || {});
  const into = h("input", { testid: "merge-into", placeholder: "canonical id, e.g. email:sam@example.com" });
  const merge = h("form", {
    class: "inline-form", testid: "merge-form",
    onsubmit: async (e) => {
      e.preventDefault();
      const target = into.value.trim();
      if (!target) return;
      const ok = await ctx.confirm(`Merge ${u.id} into ${target}?`,
        [`Its identifiers and memories move to ${target}; ${u.id} is kept as an alias.`], "Merge");
      if (!ok) return;
      try {
        await api(`/api/v1/memory-users/${enc(u.id)}/merge`, { method: "POST", body: { into: target } });
        ctx.notice(`Merged ${u.id} into ${target}.`);
        ctx.reloadList();
        ctx.open("users", target, { force: true });
      } catch (err) {
        ctx.showError(err);
      }
    },
  }, into, h("button", { type: "submit", testid: "merge-button" }, "Merge into…"));
  return h("article", { class: "detail", "data-kind": "users" },
    header(u.display_name || u.id, u.id, u.merged_into ? `merged into ${u.merged_into}` : null),
    actions(
      h("button", {
        type: "button", class: "ghost", testid: "user-facts",
        onclick: () => ctx.filterBy("facts", { user: u.id }),
      }, "Show their facts"),
      deleteButton(ctx, { what: `user ${u.id}`, path: `/api/v1/memory-users/${enc(u.id)}`, label: u.id }),
    ),
    section("Fields", "fields-section", fields([
      ["display name", u.display_name], ["namespace", u.namespace],
      ["conversations", u.conversation_count], ["last seen", fmtTime(u.last_seen)],
      ["created", fmtTime(u.created_at)], ["merged into", u.merged_into],
    ])),
    section("Identifiers", "identifiers", ids.length
      ? h("table", { class: "mini" }, h("tbody", {}, ids.map(([channel, value]) =>
        h("tr", { testid: "identifier" }, h("th", {}, channel), h("td", {}, value)))))
      : h("p", { class: "muted" }, "No channel identifiers.")),
    section("Preferences", "preferences", Object.keys(u.preferences || {}).length
      ? fields(Object.entries(u.preferences), "preference-fields")
      : h("p", { class: "muted" }, "No cached preferences.")),
    section("Merge", "merge", h("p", { class: "muted" },
      "Same person on another channel? Merge this user into the canonical one."), merge));
}

// ------------------------------------------------------------------ checkpoints
export async function threadDetail(ctx, id) {
  const t = await api(`/api/v1/checkpoints/${enc(id)}`);
  const messages = t.messages || [];
  return h("article", { class: "detail", "data-kind": "checkpoints" },
    header("Thread", t.id),
    actions(deleteButton(ctx, { what: `thread ${t.id}`, path: `/api/v1/checkpoints/${enc(t.id)}`, label: t.id })),
    section("Fields", "fields-section", fields([
      ["user", t.user], ["agent", t.agent], ["messages", t.message_count ?? messages.length],
      ["created", fmtTime(t.created_at)], ["updated", fmtTime(t.updated_at)],
    ])),
    t.summary ? section("Summary of older turns", "summary", h("p", {}, t.summary)) : "",
    section(`Messages (${messages.length})`, "messages-section", messages.length
      ? h("ol", { class: "messages", testid: "messages" }, messages.map((msg) =>
        h("li", { class: `message role-${msg.role}`, testid: "message" },
          h("div", { class: "message-head" },
            h("strong", {}, msg.role), " ", h("span", { class: "muted" }, fmtTime(msg.created_at))),
          h("div", { class: "message-content" }, msg.content))))
      : h("p", { class: "muted" }, "No messages in this thread.")));
}

// ------------------------------------------------------------------ entities
async function entityGraph(ctx, id, into) {
  try {
    const graph = await api(`/api/v1/entities/${enc(id)}/graph`);
    into.replaceChildren(graphView(graph, id, (node) => {
      if (node.kind === "entity") ctx.open("entities", node.id);
      else ctx.open(TAB_OF_TYPE[node.type] || "facts", node.id);
    }));
  } catch (e) {
    into.replaceChildren(h("p", { class: "muted inline-error" }, `Graph unavailable: ${e.message}`));
  }
}

export async function entityDetail(ctx, id) {
  const info = await api(`/api/v1/entities/${enc(id)}`);
  const e = info.entity;
  const memories = info.memories || [];
  const related = info.related || [];
  const graph = h("div", { testid: "graph-body" }, h("p", { class: "muted" }, "Loading…"));
  const node = h("article", { class: "detail", "data-kind": "entities" },
    header(e.canonical_name, e.id, e.type),
    e.summary ? h("p", { class: "content", testid: "detail-content" }, e.summary) : "",
    actions(deleteButton(ctx, {
      what: `entity ${e.canonical_name}`, path: `/api/v1/entities/${enc(e.id)}`, label: e.canonical_name,
    })),
    section("Fields", "fields-section", fields([
      ["type", e.type], ["aliases", (e.aliases || []).join(", ")], ["mentions", e.mention_count],
      ["first seen", fmtTime(e.first_seen)], ["last seen", fmtTime(e.last_seen)],
    ])),
    section("Graph", "graph-section", graph),
    section(`Linked memories (${memories.length})`, "entity-memories", memories.length
      ? h("ul", { class: "links" }, memories.map((m) => memoryLink(ctx, m)))
      : h("p", { class: "muted" }, "No memories mention it yet.")),
    section(`Related entities (${related.length})`, "related", related.length
      ? h("ul", { class: "links" }, related.map((r) => h("li", {},
        link(r.entity.canonical_name, () => ctx.open("entities", r.entity.id), "related-link"),
        " ", h("span", { class: "muted" }, `${r.entity.type} · weight ${fmtValue(r.weight)}`))))
      : h("p", { class: "muted" }, "No related entities.")));
  entityGraph(ctx, e.id, graph);
  return node;
}
