// Spaces in the browser: create one, the invitee's pending invitations with
// accept/decline, and a space page titled by its title with three tabs:
// memos (composer + timeline), members (roster, roles, invite) and access
// (the space's tree, with the grants at each path chosen from the tree).
import { api, features } from "./api.js";
import { clear, confirmDialog, dialog, field, h, toast } from "./dom.js";
import { t } from "./i18n.js";
import { navigate, state } from "./store.js";
import { displayPath, forgetPaths, homeNames, knownPaths, LEVELS, loadAccess, treeView } from "./tree.js";

const uidOf = (name) => name.replace(/^spaces\//, "");
const userOf = (name) => name.replace(/^users\//, "");

// Reload the caller's spaces, invitations and effective access; tells the
// layout to redraw the sidebar (and the banner) afterwards. `known`: the
// spaces just fetched (the boot's feature probe), so they are not asked for
// twice; invitations and access are fetched side by side.
export async function reloadSpaces(known = null) {
  if (!features.spaces) return;
  try {
    const invited = api("/spaces", { query: { state: "INVITED" }, quiet: true }).catch(() => ({ spaces: [] }));
    state.spaces = known || (await api("/spaces", { quiet: true })).spaces || [];
    await loadAccess(state.spaces);
    state.invitations = (await invited).spaces || [];
  } catch { /* keep what we had */ }
  document.dispatchEvent(new CustomEvent("spaces-changed"));
}

export function spaceTitle(uid) {
  const space = state.spaces.find((s) => s.name === `spaces/${uid}`);
  return space ? space.title || uid : "";
}

// Pending invitations, shown at the top of Home: accept or decline.
export function invitationsBanner() {
  if (!state.invitations.length) return null;
  return h("section", { class: "panel invitations", "aria-label": t("invitations") },
    h("h2", {}, t("invitations")),
    h("ul", { class: "invite-list" }, state.invitations.map((s) => h("li", { class: "invite-row" },
      h("div", {}, h("strong", {}, s.title || uidOf(s.name)),
        h("div", { class: "muted small" }, t("invitedBy", { user: userOf(s.creator || "") }))),
      h("div", { class: "row-actions" },
        h("button", { type: "button", class: "btn small", onclick: () => answer(s, "decline") }, t("decline")),
        h("button", { type: "button", class: "btn primary small", onclick: () => answer(s, "accept") }, t("accept")))))));
}

async function answer(space, verb) {
  try {
    await api(`/${space.name}/invitations/${encodeURIComponent(state.me.username)}:${verb}`, { method: "POST" });
    toast(verb === "accept" ? t("joinedSpace", { title: space.title }) : t("declinedInvite"));
    await reloadSpaces();
    if (verb === "accept") navigate("space", uidOf(space.name));
  } catch { /* toasted */ }
}

export function createSpaceDialog() {
  const [titleRow, title] = field(t("spaceTitle"), h("input", { class: "input", required: true, maxlength: "120" }));
  const about = h("textarea", { class: "input", rows: "2", maxlength: "1000" });
  const [aboutRow] = field(t("description"), about);
  const form = h("form", { class: "stack", onsubmit: async (e) => {
    e.preventDefault();
    if (!title.value.trim()) return;
    try {
      const made = await api("/spaces", { method: "POST", body: { title: title.value.trim(), description: about.value.trim() } });
      el.close("ok");
      toast(t("spaceCreated"));
      await reloadSpaces();
      navigate("space", uidOf(made.name));
    } catch { /* toasted */ }
  } }, titleRow, aboutRow);
  const el = dialog({ title: t("newSpace"), body: form, actions: [
    h("button", { class: "btn", type: "button", onclick: () => el.close("cancel") }, t("cancel")),
    h("button", { class: "btn primary", type: "button", onclick: () => form.requestSubmit() }, t("createSpace")),
  ] });
  title.focus();
}

// The header and tabs of a space page; `memosView` builds the memos tab.
export function spacePage(route, memosView) {
  const uid = route.arg;
  const name = `spaces/${uid}`;
  const space = state.spaces.find((s) => s.name === name);
  const tab = ["members", "access"].includes(route.params.tab) ? route.params.tab : "memos";
  if (!space) {
    return [h("h1", { class: "page-title" }, t("spaceNotFound")),
      h("p", { class: "muted" }, t("spaceNotFoundHelp"))];
  }
  const admin = space.membership?.role === "ADMIN";
  const tabLink = (key, label) => h("a", { href: `#/space/${encodeURIComponent(uid)}${key === "memos" ? "" : "?tab=" + key}`,
    class: "tab", "aria-current": tab === key ? "page" : null }, label);
  const head = h("header", { class: "space-head" },
    h("h1", { class: "page-title" }, space.title || uid),
    space.description ? h("p", { class: "muted space-about" }, space.description) : null,
    h("div", { class: "space-meta muted small" }, t(admin ? "youAreAdmin" : "youAreMember")),
    h("nav", { class: "tabs", "aria-label": t("spaceSections") },
      tabLink("memos", t("memos")), tabLink("members", t("members")), tabLink("access", t("accessTree"))));
  const body = tab === "members" ? membersTab(space, admin) : tab === "access" ? accessTab(space, admin) : memosView();
  return [head, body];
}

function membersTab(space, admin) {
  const list = h("ul", { class: "member-list", "aria-label": t("members") }, h("li", { class: "muted" }, t("loading")));
  const load = async () => {
    let members = [];
    try { members = (await api(`/${space.name}/members`)).members || []; } catch { return; }
    clear(list, members.map((m) => memberRow(space, m, admin, load)));
  };
  load();
  const [userRow, who] = field(t("inviteUser"), h("input", { class: "input", required: true, autocapitalize: "none",
    spellcheck: "false", placeholder: t("usernamePlaceholder"), pattern: "[A-Za-z0-9_.\\-]+" }));
  const role = h("select", { class: "select", "aria-label": t("role") },
    ["USER", "ADMIN"].map((r) => h("option", { value: r }, t(`spaceRole_${r}`))));
  const invite = admin ? h("form", { class: "invite-form", onsubmit: async (e) => {
    e.preventDefault();
    const username = who.value.trim().replace(/^@/, "");
    if (!username) return;
    try {
      await api(`/${space.name}/invitations`, { method: "POST", body: { invitee: `users/${username}`, role: role.value } });
      toast(t("invited", { user: username }));
      who.value = "";
      await load();
    } catch { /* toasted */ }
  } }, userRow, h("div", { class: "field" }, h("span", { class: "label" }, t("role")), role),
  h("div", { class: "field" }, h("span", { class: "label" }, "\u00a0"), h("button", { class: "btn primary", type: "submit" }, t("invite"))))
    : h("p", { class: "muted small" }, t("onlyAdminsInvite"));
  return h("section", { class: "panel" }, h("h2", {}, t("members")), list, invite);
}

function memberRow(space, m, admin, reload) {
  const username = userOf(m.user);
  const me = username === state.me.username;
  const invited = m.state === "INVITED";
  const roleControl = admin && !invited
    ? h("select", { class: "select small-select", "aria-label": t("roleOf", { user: username }), onchange: async (e) => {
      try {
        await api(`/${space.name}/members/${encodeURIComponent(username)}`, { method: "PATCH", body: { role: e.target.value } });
        toast(t("savedToast"));
      } catch { e.target.value = m.role; }
      await reload();
    } }, ["USER", "ADMIN"].map((r) => h("option", { value: r, selected: r === m.role }, t(`spaceRole_${r}`))))
    : h("span", { class: "badge" }, t(`spaceRole_${m.role}`));
  const remove = async () => {
    const msg = invited ? t("confirmRevokeInvite", { user: username }) : me ? t("confirmLeave", { title: space.title }) : t("confirmRemove", { user: username });
    if (!(await confirmDialog(msg, { danger: true, confirmLabel: invited ? t("revoke") : me ? t("leave") : t("remove") }))) return;
    try {
      const path = invited ? "invitations" : "members";
      await api(`/${space.name}/${path}/${encodeURIComponent(username)}`, { method: "DELETE" });
      if (me) { await reloadSpaces(); navigate("home"); return; }
      await reload();
    } catch { /* toasted */ }
  };
  return h("li", { class: "member-row" },
    h("div", { class: "member-who" }, h("strong", {}, username), me ? h("span", { class: "muted small" }, ` (${t("you")})`) : null,
      invited ? h("span", { class: "badge" }, t("invitedState")) : null),
    h("div", { class: "row-actions" }, roleControl,
      admin || me ? h("button", { type: "button", class: "btn ghost small danger", onclick: remove,
        "aria-label": invited ? t("revokeInviteOf", { user: username }) : me ? t("leave") : t("removeMember", { user: username }) },
      invited ? t("revoke") : me ? t("leave") : t("remove")) : null));
}

function accessTab(space, admin) {
  const panel = h("section", { class: "panel access-panel" }, h("h2", {}, t("accessTree")),
    h("p", { class: "muted small" }, t("accessHelp")));
  const holder = h("div", { class: "access-body" }, h("p", { class: "muted" }, t("loading")));
  panel.append(holder);
  (async () => {
    let grants = [];
    let members = [];
    let groups = [];
    let trees = [];
    try {
      [grants, members, groups, trees] = await Promise.all([
        api(`/${space.name}/grants`).then((r) => r.grants || []),
        api(`/${space.name}/members`).then((r) => r.members || []),
        api(`/${space.name}/groups`, { quiet: true }).then((r) => r.groups || []).catch(() => []),
        api("/memos", { query: { filter: "space != null", pageSize: 100 }, quiet: true })
          .then((r) => (r.memos || []).filter((m) => m.space === space.name).map((m) => m.tree)).catch(() => []),
      ]);
    } catch { holder.replaceChildren(); return; }
    const principalName = (p) => p.startsWith("users/") ? userOf(p) : groups.find((g) => g.name === p)?.title || p;
    let selected = "share";
    const detail = h("div", { class: "grant-detail" });
    const at = (path) => grants.filter((g) => g.path === path);
    const tree = treeView({
      paths: knownPaths(space.name, [...grants.map((g) => g.path), ...trees]), space: space.name, selected,
      label: t("accessTree"), homes: homeNames(grants),
      decorate: (path) => {
        const here = at(path);
        return here.length ? h("span", { class: "grant-chips" }, here.map((g) =>
          h("span", { class: `badge level-${g.level.toLowerCase()}` }, `${principalName(g.principal)} · ${t(`level_${g.level}`)}`))) : null;
      },
      onSelect: (path) => { selected = path; drawDetail(); },
    });
    const reload = async () => {
      grants = (await api(`/${space.name}/grants`)).grants || [];
      forgetPaths(space.name);
      tree.setPaths(knownPaths(space.name, grants.map((g) => g.path)));
      tree.select(selected);
      drawDetail();
      await loadAccess([space]);
    };
    function drawDetail() {
      const here = at(selected);
      const principal = h("select", { class: "select", "aria-label": t("grantTo") },
        members.filter((m) => m.state === "ACTIVE").map((m) => h("option", { value: m.user }, userOf(m.user))),
        groups.map((g) => h("option", { value: g.name }, t("groupLabel", { title: g.title }))));
      const level = h("select", { class: "select", "aria-label": t("level") },
        ["READ", "WRITE", "OWNER"].map((l) => h("option", { value: l }, t(`level_${l}`))));
      level.value = "WRITE";
      const add = h("form", { class: "grant-form", onsubmit: async (e) => {
        e.preventDefault();
        try {
          await api(`/${space.name}/grants`, { method: "POST", body: { principal: principal.value, path: selected, level: level.value } });
          toast(t("grantAdded"));
          await reload();
        } catch { /* toasted */ }
      } }, principal, level, h("button", { type: "submit", class: "btn primary small" }, t("grant")));
      clear(detail,
        h("h3", {}, t("grantsAt", { path: displayPath(selected, space.name) })),
        here.length ? h("ul", { class: "grant-list" }, here.map((g) => h("li", { class: "grant-row" },
          h("span", {}, principalName(g.principal)), h("span", { class: "badge" }, t(`level_${g.level}`)),
          h("button", { type: "button", class: "btn ghost small danger", "aria-label": t("removeGrant", { who: principalName(g.principal) }),
            onclick: async () => {
              try { await api(`/${g.name}`, { method: "DELETE" }); await reload(); } catch { /* toasted */ }
            } }, "×")))) : h("p", { class: "muted small" }, t("noGrantsHere")),
        canManage(space, selected, admin) ? add : h("p", { class: "muted small" }, t("cannotGrantHere")),
        h("p", { class: "muted small" }, t("grantCovers")));
    }
    drawDetail();
    holder.replaceChildren(h("div", { class: "access-grid" }, tree, detail));
  })();
  return panel;
}

// Managing grants under a path needs OWNER there or space ADMIN.
function canManage(space, path, admin) {
  if (admin) return true;
  const grants = state.access[space.name]?.grants || [];
  return grants.some((g) => (g.path === "" || path === g.path || path.startsWith(g.path + ".")) && LEVELS[g.level] >= LEVELS.OWNER);
}
