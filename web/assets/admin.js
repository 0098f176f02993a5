// The admin screen (#/admin): every user with role and state, create a user
// (so sign-up can stay closed), change roles, archive and restore, the
// registration switch, and one-time password reset links (decision 0022: the
// admin never learns a password; decision 0039). Loaded only when the screen
// is opened, so other pages do not pay for it.
import { api } from "./api.js";
import { clear, confirmDialog, copyText, dialog, field, h, relativeTime, toast } from "./dom.js";
import { addStrings, t } from "./i18n.js";
import { isAdmin, state } from "./store.js";
import { passwordMessage } from "./auth.js";
import { checkNewPassword } from "./passwords.js";

addStrings({
  resetLink: "Reset link",
  resetLinkFor: "Password reset link for {user}",
  resetLinkTitle: "Password reset link",
  resetLinkHelp: "Send this link to {user}. It works once, until {time}; {user} chooses the new password. Their current password keeps working until then.",
});

export function renderAdmin(container) {
  if (!isAdmin()) {
    clear(container, h("h1", { class: "page-title" }, t("users")), h("p", { class: "muted" }, t("adminOnly")));
    return;
  }
  const list = h("ul", { class: "user-list", "aria-label": t("users") }, h("li", { class: "muted" }, t("loading")));
  const load = async () => {
    let users = [];
    try { users = (await api("/users")).users || []; } catch { return; }
    clear(list, users.map((u) => userRow(u, load)));
  };
  load();
  clear(container, h("h1", { class: "page-title" }, t("users")),
    registrationPanel(),
    h("section", { class: "panel", "aria-label": t("users") }, h("h2", {}, t("users")), list),
    createUserPanel(load));
}

function userRow(u, reload) {
  const me = u.name === state.me.name;
  const archived = u.state === "ARCHIVED";
  const role = h("select", { class: "select small-select", "aria-label": t("roleOf", { user: u.username }), disabled: me,
    onchange: async () => {
      try {
        await api(`/${u.name}`, { method: "PATCH", query: { updateMask: "role" }, body: { role: role.value } });
        toast(t("savedToast"));
      } catch { /* toasted */ }
      await reload();
    } }, ["USER", "ADMIN"].map((r) => h("option", { value: r, selected: r === u.role || (r === "ADMIN" && u.role === "HOST") }, t(`userRole_${r}`))));
  const toggle = h("button", { type: "button", class: `btn small ${archived ? "" : "danger"}`, disabled: me,
    "aria-label": t(archived ? "restoreUser" : "archiveUser", { user: u.username }), onclick: async () => {
      if (!archived && !(await confirmDialog(t("confirmArchiveUser", { user: u.username }), { danger: true, confirmLabel: t("archive") }))) return;
      try {
        await api(`/${u.name}`, { method: "PATCH", query: { updateMask: "state" }, body: { state: archived ? "NORMAL" : "ARCHIVED" } });
        toast(archived ? t("userRestored") : t("userArchived"));
      } catch { /* toasted */ }
      await reload();
    } }, archived ? t("restore") : t("archive"));
  return h("li", { class: `user-row${archived ? " archived" : ""}` },
    h("div", { class: "user-who" }, h("strong", {}, u.nickname || u.username),
      u.nickname ? h("span", { class: "muted small" }, ` @${u.username}`) : null,
      me ? h("span", { class: "muted small" }, ` (${t("you")})`) : null,
      archived ? h("span", { class: "badge" }, t("archivedUser")) : null,
      h("div", { class: "muted small" }, t("joined", { time: relativeTime(u.createTime) }), u.email ? ` · ${u.email}` : "")),
    h("div", { class: "row-actions" }, role, me || archived ? null : h("button", { type: "button", class: "btn small",
      "aria-label": t("resetLinkFor", { user: u.username }), onclick: () => resetLink(u) }, t("resetLink")), toggle));
}

// A one-time link the user opens to choose a new password (never shown again).
async function resetLink(u) {
  let issued;
  try { issued = await api(`/${u.name}/passwordResets`, { method: "POST", body: {} }); } catch { return; }
  const code = h("code", { class: "secret", tabindex: "0" }, issued.resetUrl);
  const copy = h("button", { class: "btn primary", type: "button", onclick: () => copyText(issued.resetUrl) }, t("copy"));
  const dlg = dialog({ title: t("resetLinkTitle"), body: h("div", { class: "stack" },
    h("p", {}, t("resetLinkHelp", { user: u.username, time: new Date(issued.expireTime).toLocaleString() })), code),
  actions: [h("button", { class: "btn", type: "button", onclick: () => dlg.close() }, t("close")), copy] });
  copy.focus();
}

function registrationPanel() {
  const body = h("div", {}, t("loading"));
  (async () => {
    let setting;
    try { setting = await api("/instance/settings/ACCESS"); } catch { body.replaceChildren(); return; }
    const reg = h("input", { type: "checkbox", checked: setting.allowRegistration, onchange: async () => {
      try {
        await api("/instance/settings/ACCESS", { method: "PATCH", body: { ...setting, allowRegistration: reg.checked } });
        setting.allowRegistration = reg.checked;
        state.profile = await api("/instance/profile");
        toast(reg.checked ? t("registrationOpened") : t("registrationClosed"));
      } catch { reg.checked = setting.allowRegistration; }
    } });
    body.replaceChildren(h("label", { class: "check" }, reg, t("allowRegistration")),
      h("p", { class: "muted small" }, t("registrationHelp")));
  })();
  return h("section", { class: "panel", "aria-label": t("registration") }, h("h2", {}, t("registration")), body);
}

function createUserPanel(reload) {
  const [userRow, username] = field(t("username"), h("input", { class: "input", required: true, autocapitalize: "none",
    spellcheck: "false", autocomplete: "off", maxlength: "32", pattern: "[A-Za-z0-9_.\\-]+" }), t("usernameRule"));
  const [pwRow, password] = field(t("password"), h("input", { class: "input", type: "password", required: true,
    autocomplete: "new-password" }), t("passwordRule"));
  checkNewPassword(password, passwordMessage);
  const role = h("select", { class: "select" }, ["USER", "ADMIN"].map((r) => h("option", { value: r }, t(`userRole_${r}`))));
  const [roleRow] = field(t("role"), role);
  const form = h("form", { class: "stack", onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api("/users", { method: "POST", body: { username: username.value.trim(), password: password.value, role: role.value } });
      toast(t("userCreated", { user: username.value.trim() }));
      form.reset();
      await reload();
    } catch { /* toasted */ }
  } }, userRow, pwRow, roleRow, h("div", {}, h("button", { class: "btn primary", type: "submit" }, t("createUser"))));
  return h("section", { class: "panel", "aria-label": t("createUser") }, h("h2", {}, t("createUser")), form);
}
