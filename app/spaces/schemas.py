"""The Space and Member resources at the edge."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from app.api.bounds import Description, Enum, Name, PathText, Title
from app.api.structs import In, Out


class GrantTemplate(Out):
    """A default member grant: what an accepted invitation receives at ``path``."""

    path: str
    level: str


class GrantTemplateIn(In):
    path: PathText
    level: Enum


class Membership(Out):
    """The caller's own place in the space."""

    role: str
    state: str


class Space(Out):
    name: str
    title: str
    description: str
    creator: str
    create_time: str
    update_time: str
    default_member_grants: list[GrantTemplate]
    membership: Membership


class SpaceIn(In):
    """Create and update body. Output-only fields sent back are ignored."""

    title: Title | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType = msgspec.UNSET
    default_member_grants: (
        Annotated[list[GrantTemplateIn], msgspec.Meta(max_length=32)] | msgspec.UnsetType
    ) = msgspec.UNSET
    name: Any = msgspec.UNSET
    creator: Any = msgspec.UNSET


class ListSpacesResponse(Out):
    spaces: list[Space]
    next_page_token: str = ""


class Member(Out):
    name: str  # spaces/{space}/members/{username}
    user: str  # users/{username}
    role: str
    state: str
    create_time: str
    update_time: str
    inviter: str | msgspec.UnsetType = msgspec.UNSET


class ListMembersResponse(Out):
    members: list[Member]
    next_page_token: str = ""


class InvitationIn(In):
    invitee: Name
    role: Enum = "USER"


class MemberIn(In):
    role: Enum | msgspec.UnsetType = msgspec.UNSET
    name: Any = msgspec.UNSET
    user: Any = msgspec.UNSET


class Group(Out):
    name: str  # spaces/{space}/groups/{id}
    title: str
    create_time: str = ""


class GroupIn(In):
    title: Title
    name: Any = msgspec.UNSET


class ListGroupsResponse(Out):
    groups: list[Group]


class GroupMember(Out):
    name: str  # spaces/{space}/groups/{id}/members/{username}
    user: str  # users/{username}


class GroupMemberIn(In):
    user: Name


class ListGroupMembersResponse(Out):
    members: list[GroupMember]


class Grant(Out):
    name: str  # spaces/{space}/grants/{id}
    principal: str  # users/{username} or spaces/{space}/groups/{id}
    path: str  # canonical dotted; "" is the root
    level: str  # READ | WRITE | OWNER
    create_time: str = ""


class GrantIn(In):
    principal: Name
    path: PathText
    level: Enum
    name: Any = msgspec.UNSET


class ListGrantsResponse(Out):
    grants: list[Grant]


class EffectiveGrant(Out):
    path: str
    level: str


class Access(Out):
    """The caller's effective grants in a space, after any key ceiling, normalised."""

    space: str
    grants: list[EffectiveGrant]
    restricted: bool = False
