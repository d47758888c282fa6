// The Context tab: compose the prompt block for a user and a prompt (POST
// /api/v1/context/report) and show it as the agent gets it, with how it was composed:
// the tokens used of the budget, each section and its items (why each is there, its
// score) and the search hits left out below the relevance threshold.
// Every piece of text (memory content included) goes in through h(), i.e. as text.

import { api } from "./api.js";
import { TAB_OF_TYPE } from "./detail.js";
import { clear, h } from "./dom.js";

const $ = (id) => document.getElementById(id);
const DEFAULT_BUDGET = 1000;
let token = 0; // the latest request: an older answer arriving later is dropped

/** Wire the form once; `ctx` gives showError, hideError and open (from app.js). */
export function setupContext(ctx) {
  $("context-form").addEventListener("submit", (e) => {
    e.preventDefault();
    compose(ctx);
  });
}

/** The tab was opened (or the namespace changed): refresh the user suggestions. */
export async function showContext() {
  try {
    const page = await api("/api/v1/memory-users/", { params: { limit: 200 } });
    clear($("context-users"), (page?.items || []).map((u) => h("option", { value: u.id },
      u.display_name || "")));
  } catch {
    // only suggestions: the box still takes any user id
  }
}

/** Forget the last result (another namespace or key: it no longer applies). */
export function resetContext() {
  token++;
  clear($("context-result"), h("p", { class: "muted placeholder" },
    "Pick a user, type a prompt and press “Compose context”."));
}

function readForm() {
  const user = $("context-user").value.trim();
  const prompt = $("context-prompt").value;
  const raw = $("context-budget").value.trim();
  // an empty box sends the default; anything else goes as typed, so the server's
  // own validation answers a bad budget (shown in the banner)
  const budget = raw === "" ? DEFAULT_BUDGET : Number(raw);
  return { user: user || null, prompt: prompt.trim() ? prompt : null, budget };
}

async function compose(ctx) {
  const result = $("context-result");
  const mine = ++token;
  ctx.hideError();
  result.setAttribute("aria-busy", "true");
  $("context-button").disabled = true;
  try {
    const body = readForm();
    const report = await api("/api/v1/context/report", { method: "POST", body });
    if (mine !== token) return;
    clear(result, reportView(ctx, report, body));
  } catch (e) {
    if (mine !== token) return;
    ctx.showError(e);
    clear(result, h("div", { class: "empty error", testid: "context-error" },
      `Could not compose the context: ${e.message}`));
  } finally {
    if (mine === token) result.removeAttribute("aria-busy");
    $("context-button").disabled = false;
  }
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function fmtScore(score) {
  return typeof score === "number" ? score.toFixed(3) : "";
}

// ------------------------------------------------------------------ the report
function reportView(ctx, report, asked) {
  const share = report.budget ? Math.min(report.tokens / report.budget, 1) : 0;
  const summary = h("div", { class: "context-summary", testid: "context-summary" },
    h("strong", { testid: "context-tokens" },
      `${report.tokens} of ${report.budget} tokens used`),
    h("progress", {
      value: report.tokens, max: report.budget, testid: "context-usage",
      "aria-label": `${Math.round(share * 100)}% of the budget used`,
    }),
    h("span", { class: "muted", testid: "context-threshold" },
      `relevance threshold ${report.threshold.toFixed(2)}`));
  const block = report.block
    ? h("pre", { class: "context-block", testid: "context-block" }, report.block)
    : h("p", { class: "muted", testid: "context-block-empty" },
      "The block is empty: no memory this reader may see is in it.");
  return h("div", {},
    summary,
    h("div", { class: "context-columns" },
      h("section", { class: "block context-pane", testid: "context-block-pane" },
        h("h3", {}, "The block, as the agent gets it"), block),
      h("section", { class: "block context-pane", testid: "context-sections" },
        h("h3", {}, "How it was composed"),
        report.sections.length
          ? report.sections.map((s) => sectionView(ctx, s))
          : h("p", { class: "muted" }, "No sections."),
        leftOutView(ctx, report, asked))));
}

function sectionView(ctx, section) {
  return h("section", {
    class: `context-section${section.cacheable ? " cacheable" : ""}`, testid: "context-section",
    "data-cacheable": String(section.cacheable),
  },
  h("header", { class: "context-section-head" },
    h("strong", { testid: "context-section-title" }, section.title),
    section.cacheable
      ? h("span", { class: "badge", testid: "context-cacheable",
        title: "the same for every prompt: a conversation loads it once" }, "cacheable")
      : h("span", { class: "badge dynamic", testid: "context-dynamic",
        title: "chosen for this prompt" }, "this prompt"),
    h("span", { class: "muted", testid: "context-section-tokens" },
      plural(section.tokens, "token"))),
  h("ol", { class: "context-items" }, section.items.map((item) => itemView(ctx, item))));
}

function itemView(ctx, item, testid = "context-item") {
  const facts = [`score ${fmtScore(item.score)}`];
  if (item.tokens) facts.push(plural(item.tokens, "token"));
  return h("li", { class: "context-item", testid },
    h("pre", { class: "context-lines", testid: "context-lines" }, item.lines.join("\n")),
    h("div", { class: "context-why" },
      h("span", { class: "muted", testid: "context-score" }, facts.join(" · ")),
      h("span", { class: "muted" }, " — "),
      h("span", { testid: "context-why" }, item.why),
      item.memory_ids.length
        ? h("span", { class: "context-ids" }, " ", item.memory_ids.map((id) => idLink(ctx, id)))
        : ""));
}

function leftOutView(ctx, report, asked) {
  if (!asked.prompt) return "";
  const n = report.left_out.length;
  return h("details", { class: "context-left-out", testid: "context-left-out" },
    h("summary", { testid: "context-left-out-summary" },
      n
        ? `${plural(n, "search hit")} left out below the threshold ${report.threshold.toFixed(2)}`
        : `No search hit left out below the threshold ${report.threshold.toFixed(2)}`),
    n
      ? h("ol", { class: "context-items" },
        report.left_out.map((item) => itemView(ctx, item, "context-left-out-item")))
      : "");
}

/** A memory id that opens the memory in its own tab (its type read from the API). */
function idLink(ctx, id) {
  return h("a", {
    href: "#", class: "context-id", testid: "context-memory-id", title: "open this memory",
    onclick: async (e) => {
      e.preventDefault();
      try {
        const detail = await api(`/api/v1/memories/${encodeURIComponent(id)}/history`);
        ctx.open(TAB_OF_TYPE[detail.memory.type] || "facts", id);
      } catch (err) {
        ctx.showError(err);
      }
    },
  }, h("code", {}, id));
}
