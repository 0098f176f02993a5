// Settings: profile, password, personal access tokens (with restricted keys
// for agents) and, for admins, the instance's access settings.
import { api, features } from "./api.js";
import { clear, confirmDialog, copyText, dialog, field, h, relativeTime, toast } from "./dom.js";
import { t } from "./i18n.js";
import { state } from "./store.js";
import { displayPath, pathPicker } from "./tree.js";
import { passwordMessage } from "./auth.js";
import { checkNewPassword } from "./passwords.js";

export function renderSettings(container, { onSignedIn }) {
  clear(container,
    h("h1", { class: "page-title" }, t("settings")),
    profileSection(), passwordSection(onSignedIn), dataSection(), tokensSection(),
    state.me.role === "ADMIN" || state.me.role === "HOST" ? instanceSection() : null);
}

const card = (title, ...body) => h("section", { class: "panel", "aria-label": title }, h("h2", {}, title), ...body);
const user = () => `/users/${encodeURIComponent(state.me.username)}`;

// "Your data": export, import (validate first) and the trash; loaded on demand.
function dataSection() {
  const body = h("div", {}, t("loading"));
  import("./data.js").then((m) => m.renderData(body));
  return card(t("yourData"), body);
}

function profileSection() {
  const [nickRow, nick] = field(t("nickname"), h("input", { class: "input", value: state.me.nickname || "", maxlength: "64" }));
  const [mailRow, mail] = field(t("email"), h("input", { class: "input", type: "email", value: state.me.email || "" }));
  const about = h("textarea", { class: "input", rows: "2" });
  about.value = state.me.description || "";
  const [aboutRow] = field(t("description"), about);
  return card(t("profile"), h("form", { class: "stack", onsubmit: async (e) => {
    e.preventDefault();
    try {
      state.me = await api(user(), { method: "PATCH", query: { updateMask: "nickname,email,description" },
        body: { nickname: nick.value, email: mail.value, description: about.value } });
      toast(t("savedToast"));
    } catch { /* toasted */ }
  } }, nickRow, mailRow, aboutRow, h("div", {}, h("button", { class: "btn primary", type: "submit" }, t("saveProfile")))));
}

function passwordSection(onSignedIn) {
  const [row0, current] = field(t("currentPassword"), h("input", { class: "input", type: "password", autocomplete: "current-password", required: true }));
  const [row1, pw] = field(t("newPassword"), h("input", { class: "input", type: "password", autocomplete: "new-password", required: true }), t("passwordRule"));
  checkNewPassword(pw, passwordMessage);
  const [row2, pw2] = field(t("passwordConfirm"), h("input", { class: "input", type: "password", autocomplete: "new-password", required: true }));
  return card(t("changePassword"), h("form", { class: "stack", onsubmit: async (e) => {
    e.preventDefault();
    if (pw.value !== pw2.value) { toast(t("passwordMismatch"), "error"); return; }
    try {
      await api(user(), { method: "PATCH", query: { updateMask: "password" }, body: { password: pw.value, currentPassword: current.value } });
      // A password change ends every session, this one included: sign in again.
      const res = await api("/auth/signin", { method: "POST",
        body: { passwordCredentials: { username: state.me.username, password: pw.value } } });
      onSignedIn(res);
      toast(t("passwordChanged"));
    } catch { /* toasted */ }
  } }, h("input", { type: "text", name: "username", autocomplete: "username", value: state.me.username, hidden: true, readonly: true }),
  row0, row1, row2, h("div", {}, h("button", { class: "btn primary", type: "submit" }, t("changePassword")))));
}

function tokensSection() {
  const list = h("ul", { class: "token-list" });
  const load = async () => {
    try {
      const res = await api(`${user()}/personalAccessTokens`);
      const tokens = res.personalAccessTokens || [];
      clear(list, ...(tokens.length ? tokens.map(tokenRow) : [h("li", { class: "muted" }, t("noTokens"))]));
    } catch { /* toasted */ }
  };
  const tokenRow = (tok) => h("li", { class: "token" },
    h("div", {}, h("strong", {}, tok.description || tok.name.split("/").pop()), " ", h("code", {}, tok.tokenHint),
      h("div", { class: "muted small" },
        t("tokenCreatedAt", { time: relativeTime(tok.createTime) }),
        tok.lastUsedAt ? ` · ${t("tokenLastUsed", { time: relativeTime(tok.lastUsedAt) })}` : "",
        tok.expiresAt ? ` · ${t("tokenExpiry")} ${new Date(tok.expiresAt).toLocaleDateString()}` : "",
        tok.restriction ? ` · ${restrictionSummary(tok.restriction)}` : "")),
    h("button", { type: "button", class: "btn small danger", onclick: async () => {
      if (!(await confirmDialog(t("confirmRevoke", { name: tok.description || tok.name }), { confirmLabel: t("revoke"), danger: true }))) return;
      try { await api(`/${tok.name}`, { method: "DELETE" }); await load(); } catch { /* toasted */ }
    } }, t("revoke")));
  load();
  return card(t("tokens"), h("p", { class: "muted" }, t("tokensHelp")), list, tokenForm(load));
}

function restrictionSummary(r) {
  const spaces = (r.spaces || []).map((d) => {
    const title = state.spaces.find((s) => s.name === d.space)?.title || d.space.replace(/^spaces\//, "");
    const trees = (d.trees || []).map((tr) => `${displayPath(tr.path, d.space)} (${t(`level_${tr.level}`)})`);
    return trees.length ? `${title}: ${trees.join(", ")}` : title;
  });
  return t("tokenRestrictedHuman", { scope: t(`scope_${r.scope}`), personal: t(`personal_${r.personal}`),
    spaces: spaces.length ? spaces.join("; ") : t("noSpacesShort") });
}

function tokenForm(reload) {
  const [descRow, desc] = field(t("tokenDescription"), h("input", { class: "input", maxlength: "256", required: true }));
  const expiry = h("select", { class: "select" }, h("option", { value: "" }, t("never")),
    [7, 30, 90, 365].map((n) => h("option", { value: String(n) }, t("days", { n }))));
  const [expRow] = field(t("tokenExpiry"), expiry);
  const restrict = h("input", { type: "checkbox", id: "restrict-key" });
  const radios = (name, values, checked) => h("div", { class: "radio-row", role: "radiogroup", "aria-label": t(name) },
    values.map((v) => h("label", { class: "radio" }, h("input", { type: "radio", name: `key-${name}`, value: v, checked: v === checked }), t(`${name}_${v}`))));
  const scope = radios("scope", ["READ", "WRITE"], "READ");
  const personal = radios("personal", ["NONE", "OWN", "AUDIENCE"], "NONE");
  // The spaces block is filled now and again when the spaces arrive (Settings
  // loaded directly, issue 19 defect 5), without redrawing the rest of the form.
  let spaceRows = [];
  const spacesBlock = h("div", { class: "field" });
  const fillSpaces = () => {
    if (spaceRows.some((r) => r.value())) return; // never drop what the user chose
    spaceRows = features.spaces ? state.spaces.map(spaceCeiling) : [];
    spacesBlock.hidden = !spaceRows.length;
    spacesBlock.replaceChildren(h("span", { class: "label" }, t("keySpaces")), ...spaceRows.map((r) => r.el));
  };
  fillSpaces();
  document.addEventListener("spaces-changed", () => { if (spacesBlock.isConnected) fillSpaces(); });
  const restriction = h("fieldset", { class: "restriction", hidden: true },
    h("legend", {}, t("restrictionLegend")),
    h("div", { class: "field" }, h("span", { class: "label" }, t("scope")), scope),
    h("div", { class: "field" }, h("span", { class: "label" }, t("personal")), personal),
    spacesBlock);
  restrict.addEventListener("change", () => { restriction.hidden = !restrict.checked; });
  const form = h("form", { class: "stack token-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = { description: desc.value.trim() };
    if (expiry.value) body.expireTime = new Date(Date.now() + Number(expiry.value) * 86400e3).toISOString().replace(/\.\d{3}Z$/, "Z");
    if (restrict.checked) {
      body.restriction = {
        scope: form.querySelector("input[name=key-scope]:checked").value,
        personal: form.querySelector("input[name=key-personal]:checked").value,
        spaces: spaceRows.map((r) => r.value()).filter(Boolean),
      };
    }
    try {
      const res = await api(`${user()}/personalAccessTokens`, { method: "POST", body });
      showSecret(res.token);
      form.reset();
      spaceRows = [];
      fillSpaces();
      restriction.hidden = true;
      await reload();
    } catch { /* toasted */ }
  } }, descRow, expRow,
  h("label", { class: "check" }, restrict, t("restricted")), restriction,
  h("div", {}, h("button", { class: "btn primary", type: "submit" }, t("createToken"))));
  return form;
}

// A declared space for a restricted key: no rows means the whole space (up
// to what the holder has); each row narrows it to a path chosen from the
// space's tree, at a level.
function spaceCeiling(space) {
  const declare = h("input", { type: "checkbox", "aria-label": t("keyDeclareSpace", { title: space.title || space.name }) });
  const rows = h("div", { class: "path-rows" });
  const addRow = () => {
    const picker = pathPicker({ space: space.name, value: "share", label: t("keyPath") });
    const level = h("select", { class: "select", "aria-label": t("level") },
      ["READ", "WRITE", "OWNER"].map((l) => h("option", { value: l }, t(`level_${l}`))));
    const row = h("div", { class: "path-row" }, picker, level,
      h("button", { type: "button", class: "btn ghost small", "aria-label": t("removePath"), onclick: () => row.remove() }, "×"));
    row.read = () => ({ path: picker.value(), level: level.value });
    rows.append(row);
    declare.checked = true;
  };
  const el = h("div", { class: "space-ceiling" },
    h("label", { class: "check" }, declare, space.title || space.name),
    h("p", { class: "muted small" }, t("keySpaceHelp")), rows,
    h("button", { type: "button", class: "btn ghost small", onclick: addRow }, t("addPath")));
  return { el, value: () => declare.checked
    ? { space: space.name, trees: [...rows.children].map((r) => r.read()) }
    : null };
}

function showSecret(secret) {
  const code = h("code", { class: "secret", tabindex: "0" }, secret);
  const copy = h("button", { class: "btn primary", type: "button", onclick: () => copyText(secret) }, t("copy"));
  const dlg = dialog({ title: t("tokens"), body: h("div", { class: "stack" }, h("p", {}, t("tokenCreated")), code),
    actions: [h("button", { class: "btn", type: "button", onclick: () => dlg.close() }, t("close")), copy] });
  copy.focus();
}

function instanceSection() {
  const body = h("div", {}, t("loading"));
  (async () => {
    let setting;
    try { setting = await api("/instance/settings/ACCESS"); } catch { body.replaceChildren(); return; }
    const mode = h("select", { class: "select" }, ["PRIVATE", "PUBLIC"].map((m) => h("option", { value: m }, t(`accessMode_${m}`))));
    mode.value = setting.accessMode;
    const reg = h("input", { type: "checkbox", checked: setting.allowRegistration });
    const noPublic = h("input", { type: "checkbox", checked: setting.disallowPublicVisibility });
    const [limitRow, limit] = field(t("contentLimit"), h("input", { class: "input", type: "number", min: "1", value: String(setting.contentLengthLimit) }));
    body.replaceChildren(h("form", { class: "stack", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("/instance/settings/ACCESS", { method: "PATCH", body: { accessMode: mode.value,
          allowRegistration: reg.checked, disallowPublicVisibility: noPublic.checked, contentLengthLimit: Number(limit.value) } });
        state.profile = await api("/instance/profile");
        toast(t("savedToast"));
      } catch { /* toasted */ }
    } }, field(t("accessMode"), mode)[0],
    h("label", { class: "check" }, reg, t("allowRegistration")),
    h("label", { class: "check" }, noPublic, t("disallowPublic")), limitRow,
    h("div", {}, h("button", { class: "btn primary", type: "submit" }, t("saveInstance")))));
  })();
  return card(t("instance"), body);
}
