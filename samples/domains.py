"""What the sample calls talk about: per domain, the facts of a call, the dialogue, the tools and their
results, the knowledge-base passages, the flow nodes, the reference actions and the databases.

Everything here is plain data and small pure functions of a call's facts; `samples.generate` turns it
into events. Facts are strings exactly as the agent says them ("$412.80", "4:35pm"), so that the same
figure appears in the agent's variables or tool results and in what it says — that is what makes a
stated fact grounded. Each domain also names the lines that make an agent look bad: a figure nobody gave
it, a robotic phrase, a contradiction, a recap far too long for a phone call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

Facts = dict[str, str]

FIRST_NAMES = (
    "Dana",
    "Luis",
    "Priya",
    "Marcus",
    "Hannah",
    "Kenji",
    "Olivia",
    "Tomás",
    "Aisha",
    "Grace",
    "Wei",
    "Noah",
    "Fatima",
    "Ethan",
    "Sofia",
    "Jamal",
    "Chloe",
    "Arjun",
    "Maya",
    "Owen",
)
LAST_NAMES = (
    "Whitfield",
    "Moreno",
    "Raman",
    "Bell",
    "Kowalski",
    "Tanaka",
    "Brennan",
    "Ruiz",
    "Okafor",
    "Lindqvist",
    "Chen",
    "Foster",
    "Haddad",
    "Walsh",
    "Rossi",
    "Greene",
    "Dubois",
    "Mehta",
    "Novak",
    "Sullivan",
)
CITIES = ("Denver", "Seattle", "Chicago", "Boston", "Austin", "Atlanta", "Phoenix", "Portland", "Miami", "Detroit")
HOTELS = ("Hilton Garden Inn downtown", "Marriott by the airport", "Hyatt Place on Fifth", "Westin on the river")
MONTH_DAYS = tuple(f"{month} {day}" for month in ("October", "November") for day in range(7, 29))
PRODUCTS = (
    ("blender", "$89.99"),
    ("air fryer", "$119.00"),
    ("desk lamp", "$42.50"),
    ("coffee grinder", "$64.95"),
    ("space heater", "$74.99"),
    ("stand mixer", "$249.00"),
    ("robot vacuum", "$329.99"),
)
SHOES = (("trail running shoes", "$134.00"), ("leather boots", "$189.50"), ("canvas sneakers", "$58.00"))
COUNTRIES = ("Mexico", "Canada", "Italy", "Japan", "Portugal", "the United Kingdom")
DOCTORS = ("Patel", "Nguyen", "Okoye", "Schneider", "Alvarez")
WEEKDAY_SLOTS = (
    "Monday at 9:15am",
    "Tuesday at 2:30pm",
    "Wednesday at 11:45am",
    "Thursday at 10:15am",
    "Thursday at 3:40pm",
    "Friday at 8:50am",
    "Friday at 1:20pm",
)
CONFIRMATION_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


# ------------------------------------------------------------------------------------- building blocks


@dataclass(frozen=True)
class Tool:
    """A tool the agent (or the simulated user) can call: its arguments and its successful result."""

    name: str
    arguments: Callable[[Facts], dict[str, Any]]
    result: Callable[[Facts], Any]
    side: str = "agent"


@dataclass(frozen=True)
class Passage:
    """A knowledge-base passage, and how an agent that actually uses it says it to the caller."""

    text: str
    paraphrase: str


@dataclass(frozen=True)
class Step:
    """One exchange: the caller speaks, the agent may call a tool or consult the knowledge base, and replies."""

    user: str
    agent: str
    tool: str | None = None
    kb: str | None = None
    node: str | None = None
    action: bool = False  # the step whose tool call is the scenario's action (a predicted action follows it)
    user_tool: str | None = None  # a tool the simulated user runs on its own device (dual-side domains)


@dataclass(frozen=True)
class Domain:
    name: str
    brand: str
    agent_id: str
    prompt: str
    flow_nodes: tuple[str, ...]
    passages: dict[str, Passage]
    greeting: str
    closing_user: tuple[str, ...]
    closing_agent: str
    transfer_target: str
    transfer_request: str  # what a caller says to be put through to a person
    # Lines that make the agent look bad, with placeholders from the facts.
    ungrounded_lines: tuple[str, ...]  # {bogus_price} / {bogus_time}: figures nobody gave the agent
    contradiction: tuple[str, str]  # a statement, then the same statement negated
    misheard: dict[str, str]  # word → what speech-to-text made of it
    dual_side: bool = False  # the simulated user has a device DB of its own (tau2-telecom style)


@dataclass(frozen=True)
class Task:
    domain: Domain
    name: str
    description: str
    cohort_ids: tuple[str, ...]
    facts: Callable[[Random], Facts]
    variables: tuple[str, ...]  # the facts the agent is given at the start of the call
    steps: tuple[Step, ...]
    tools: dict[str, Tool]
    success_signals: tuple[str, ...] = ()
    reference: Callable[[Facts], Any] | None = None
    nl_assertions: tuple[str, ...] = ()
    # The agent-side (and the simulated user's) DB at the end of the call: done = the action happened.
    db: Callable[[Facts, bool], dict[str, Any]] | None = None
    user_db: Callable[[Facts, bool], dict[str, Any]] | None = None
    db_assertions: Callable[[Facts], list[dict[str, Any]]] | None = None
    wrong_facts: Callable[[Facts], Facts] | None = None  # how a wrong action differs from the right one
    scenario: bool = True  # False: only ever seen in production traffic

    @property
    def key(self) -> str:
        return f"{self.domain.name}__{self.name}"


def tools(*items: Tool) -> dict[str, Tool]:
    return {tool.name: tool for tool in items}


# ------------------------------------------------------------------------------------------- figures


def person(rng: Random) -> Facts:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    return {"first_name": first, "customer_name": f"{first} {last}"}


def clock_time(rng: Random, first_hour: int, last_hour: int) -> str:
    """A time of day as an agent says it: "4:35pm", "11:05am"."""
    hour = rng.randint(first_hour, last_hour)
    minute = rng.choice((5, 10, 15, 20, 25, 35, 40, 50, 55))
    suffix = "am" if hour < 12 else "pm"
    return f"{(hour - 1) % 12 + 1}:{minute:02d}{suffix}"


def money(rng: Random, low: int, high: int) -> str:
    return f"${rng.randint(low, high)}.{rng.choice((0, 20, 45, 50, 80, 95)):02d}"


def amount(price: str) -> float:
    return float(price.lstrip("$").replace(",", ""))


def digits(rng: Random, n: int) -> str:
    return "".join(str(rng.randint(1 if i == 0 else 0, 9)) for i in range(n))


def confirmation_code(rng: Random) -> str:
    # Letters with one or two digits, never three in a row: a booking code is not a fact to check.
    chars = [rng.choice(CONFIRMATION_LETTERS) for _ in range(6)]
    for index in rng.sample(range(6), 2):
        chars[index] = str(rng.randint(2, 9))
    return "".join(chars)


# ============================================================================================ airline

AIRLINE = Domain(
    name="airline",
    brand="SkyWays Airlines",
    agent_id="skyways-concierge-v3",
    prompt=(
        "You are Ava, the voice concierge for SkyWays Airlines. Help callers change, cancel and track "
        "trips and delayed bags. Verify the confirmation code or bag tag before discussing a booking. "
        "The change fee is $75 for Basic and Main fares and waived for Gold members. Refundable fares "
        "go back to the original payment within 7 business days. Confirm before changing anything, keep "
        "replies short, and call EndConversationTool when the caller is done."
    ),
    flow_nodes=("greeting", "verify_booking", "lookup", "options", "confirm_change", "wrap_up"),
    passages={
        "change_policy": Passage(
            "Same-day flight changes: Gold and Platinum members change for free. All other fares pay a "
            "change fee of $75 plus any fare difference. Changes close 30 minutes before departure.",
            "Just so you know, Gold and Platinum members change for free, other fares pay the change fee "
            "plus any fare difference, and changes close 30 minutes before departure.",
        ),
        "baggage_policy": Passage(
            "Delayed baggage: most delayed bags are delivered within 24 hours. Customers may claim up to "
            "$50 per day for essential items for a maximum of 5 days. Receipts are required for claims.",
            "While you wait, you can claim up to $50 per day for essential items, for up to 5 days, as "
            "long as you keep the receipts.",
        ),
        "refund_policy": Passage(
            "Refunds: tickets cancelled within 24 hours of booking get a full refund. Refundable fares are "
            "returned to the original form of payment within 7 business days. Non-refundable fares "
            "become travel credit valid for one year.",
            "Refundable fares go back to the original form of payment within 7 business days.",
        ),
    },
    greeting="Thank you for calling SkyWays Airlines, this is Ava. How can I help you today?",
    closing_user=("Perfect, that's everything. Thanks for your help.", "Great, that's all I needed. Bye!"),
    closing_agent="You're welcome, {first_name}. Have a great trip!",
    transfer_target="skyways-agents-queue",
    transfer_request="Actually, can I talk to a person about this?",
    ungrounded_lines=(
        "I've also added a {bogus_price} travel credit to your account for the trouble.",
        "Our lounge is open until {bogus_time} tonight if you'd like to wait there.",
    ),
    contradiction=(
        "Your seat assignment carries over to the new flight.",
        "Your seat assignment does not carry over to the new flight.",
    ),
    misheard={
        "flight": "fight",
        "suitcase": "suit case",
        "cancel": "council",
        "booking": "cooking",
        "earlier": "early",
    },
)


def airline_facts(rng: Random) -> Facts:
    origin, destination = rng.sample(CITIES, 2)
    fare = money(rng, 180, 640)
    delivery = rng.choice((("6pm", "9pm"), ("7pm", "10pm"), ("2pm", "5pm")))
    return {
        **person(rng),
        "confirmation_code": confirmation_code(rng),
        "flight_number": f"SW {rng.randint(1000, 2999)}",
        "alt_flight": f"SW {rng.randint(3000, 4999)}",
        "wrong_flight": f"SW {rng.randint(5000, 5999)}",
        "origin": origin,
        "destination": destination,
        "travel_date": rng.choice(MONTH_DAYS),
        "original_departure": clock_time(rng, 18, 21),
        "alt_departure": clock_time(rng, 12, 16),
        "alt_seat": f"{rng.randint(8, 32)}{rng.choice('ABCDEF')}",
        "change_fee": "$75",
        "fare_paid": fare,
        "bag_tag": f"SW{digits(rng, 6)}",
        "hotel": rng.choice(HOTELS),
        "delivery_start": delivery[0],
        "delivery_end": delivery[1],
        "loyalty_tier": rng.choice(("Basic", "Silver", "Main")),
        "refund_eta": "7 business days",
    }


def airline_db(f: Facts, done: bool) -> dict[str, Any]:
    """The reservation system after the call: rebooked, cancelled, or (not done) as it was."""
    task = f["task"]
    rebooked = done and task == "rebook"
    bookings = [
        # "None" as a string and 75.0 as a float: the hash must read them as null and 75.
        {
            "booking_id": "B1",
            "flight": f["alt_flight"] if rebooked else f["flight_number"],
            "seat": f["alt_seat"] if rebooked else "22C",
            "meal": "None",
        },
        {"booking_id": "B2", "flight": "SW 1000", "seat": "17A", "meal": "vegetarian"},
    ]
    notifications = [{"id": "N1", "channel": "email", "template": "booking_created"}]
    if done:
        notifications.append({"id": "N2", "channel": "email", "template": f"{task}_confirmation"})
    return {
        "reservations": {
            f["confirmation_code"]: {
                "passenger": f["customer_name"],
                "date": f["travel_date"],
                "status": "cancelled" if done and task == "cancel" else "confirmed",
                "fare_class": f["loyalty_tier"].lower(),
                "amount_paid": amount(f["fare_paid"]),
                "change_fee_paid": 75.0 if rebooked else 0.0,
            }
        },
        "bookings": bookings,
        "notifications": notifications,
        "standby_list": [],
    }


AIRLINE_TOOLS = tools(
    Tool(
        "get_reservation",
        lambda f: {"confirmation_code": f["confirmation_code"]},
        lambda f: {
            "confirmation_code": f["confirmation_code"],
            "passenger": f["customer_name"],
            "flight": f["flight_number"],
            "route": f"{f['origin']} to {f['destination']}",
            "date": f["travel_date"],
            "departure": f["original_departure"],
            "fare": {"amount": amount(f["fare_paid"]), "refundable": True},
        },
    ),
    Tool(
        "search_flights",
        lambda f: {"origin": f["origin"], "destination": f["destination"], "date": f["travel_date"]},
        lambda f: {
            "flights": [
                {
                    "flight": f["alt_flight"],
                    "departure": f["alt_departure"],
                    "seats": [f["alt_seat"]],
                    "fare_difference": 0,
                }
            ]
        },
    ),
    Tool(
        "rebook_flight",
        lambda f: {
            "confirmation_code": f["confirmation_code"],
            "flight_number": f["alt_flight"],
            "seat": f["alt_seat"],
        },
        lambda f: {"success": True, "flight": f["alt_flight"], "departure": f["alt_departure"], "fee_charged": 75},
    ),
    Tool(
        "trace_bag",
        lambda f: {"bag_tag": f["bag_tag"]},
        lambda f: {
            "bag_tag": f["bag_tag"],
            "located": True,
            "location": f"{f['origin']} airport",
            "next_flight": f["alt_flight"],
        },
    ),
    Tool(
        "schedule_bag_delivery",
        lambda f: {"bag_tag": f["bag_tag"], "address": f["hotel"]},
        lambda f: {"success": True, "window": f"{f['delivery_start']} to {f['delivery_end']}"},
    ),
    Tool(
        "cancel_reservation",
        lambda f: {"confirmation_code": f["confirmation_code"], "refund_to": "original_payment"},
        lambda f: {"success": True, "refund_amount": amount(f["fare_paid"]), "refund_eta": f["refund_eta"]},
    ),
)

AIRLINE_TASKS = (
    Task(
        AIRLINE,
        "rebook",
        "Move a caller to an earlier flight on the same day and charge the change fee.",
        ("support", "travel"),
        lambda rng: {**airline_facts(rng), "task": "rebook"},
        ("customer_name", "confirmation_code", "loyalty_tier", "change_fee"),
        (
            Step(
                "Hi, I'm booked on a flight to {destination} tonight and I'd like to get on an earlier one.",
                "Sure, I can look into that. Could you give me your confirmation code?",
                node="verify_booking",
            ),
            Step(
                "Yes, it's {confirmation_code}.",
                "Thanks, {first_name}. I see you on flight {flight_number} from {origin} to {destination} on "
                "{travel_date}, departing at {original_departure}.",
                tool="get_reservation",
                node="lookup",
            ),
            Step(
                "Is there anything earlier in the afternoon?",
                "There's a seat on flight {alt_flight}, departing at {alt_departure}, seat {alt_seat}. The change "
                "fee for your fare is {change_fee}.",
                tool="search_flights",
                kb="change_policy",
                node="options",
            ),
            Step(
                "Okay, please move me to the {alt_departure} flight.",
                "Done. You're confirmed on flight {alt_flight} departing at {alt_departure}, seat {alt_seat}, and "
                "the {change_fee} fee went on the card on file.",
                tool="rebook_flight",
                node="confirm_change",
                action=True,
            ),
        ),
        AIRLINE_TOOLS,
        success_signals=("is_action_match", "db_state_match", "clean_exit"),
        reference=lambda f: [
            {
                "action": "rebook_flight",
                "confirmation_code": f["confirmation_code"],
                "flight_number": f["alt_flight"],
                "change_fee_usd": 75,
            }
        ],
        nl_assertions=(
            "The agent verified the confirmation code before changing the booking.",
            "The agent told the caller the change fee before rebooking.",
        ),
        db=airline_db,
        wrong_facts=lambda f: {**f, "alt_flight": f["wrong_flight"]},
    ),
    Task(
        AIRLINE,
        "baggage",
        "Trace a delayed bag and schedule delivery to the caller's hotel.",
        ("support", "travel"),
        lambda rng: {**airline_facts(rng), "task": "baggage"},
        ("customer_name", "bag_tag"),
        (
            Step(
                "Hi, I landed in {destination} this morning but my suitcase never showed up.",
                "I'm sorry about that. Do you have the bag tag number from your boarding pass?",
                node="verify_booking",
            ),
            Step(
                "Yes, the tag number is {bag_tag}.",
                "Thank you. Your bag was found at {origin} airport and it's going out on flight {alt_flight}.",
                tool="trace_bag",
                node="lookup",
            ),
            Step(
                "Can you send it to my hotel? I'm staying at the {hotel}.",
                "Of course. It will be delivered to the {hotel} between {delivery_start} and {delivery_end} today.",
                tool="schedule_bag_delivery",
                node="confirm_change",
                action=True,
            ),
            Step(
                "Can I get reimbursed for toiletries in the meantime?",
                "Yes, you can submit a claim on our website.",
                kb="baggage_policy",
                node="options",
            ),
        ),
        AIRLINE_TOOLS,
        success_signals=("is_action_match", "clean_exit"),
        reference=lambda f: {"bag_tag": f["bag_tag"], "deliver_to": f["hotel"]},
        nl_assertions=("The agent gave the caller a delivery window for the bag.",),
    ),
    Task(
        AIRLINE,
        "cancel",
        "Cancel a refundable booking and refund it to the original payment.",
        ("support", "travel"),
        lambda rng: {**airline_facts(rng), "task": "cancel"},
        ("customer_name", "confirmation_code", "refund_eta"),
        (
            Step(
                "I need to cancel my trip to {destination} on {travel_date}.",
                "I can help with that. What's your confirmation code?",
                node="verify_booking",
            ),
            Step(
                "It's {confirmation_code}.",
                "Thanks, {first_name}. I have flight {flight_number} on {travel_date}, booked on a refundable "
                "fare of {fare_paid}.",
                tool="get_reservation",
                node="lookup",
            ),
            Step(
                "How much would I get back if I cancel?",
                "Since the fare is refundable, you'd get the full {fare_paid} back.",
                kb="refund_policy",
                node="options",
            ),
            Step(
                "Okay, go ahead and cancel it.",
                "It's cancelled. The refund of {fare_paid} will reach your card within {refund_eta}.",
                tool="cancel_reservation",
                node="confirm_change",
                action=True,
            ),
        ),
        AIRLINE_TOOLS,
        success_signals=("is_action_match", "db_state_match", "clean_exit"),
        reference=lambda f: [
            {
                "action": "cancel_reservation",
                "confirmation_code": f["confirmation_code"],
                "refund_amount": amount(f["fare_paid"]),
            }
        ],
        db=airline_db,
    ),
)


# ============================================================================================= retail

RETAIL = Domain(
    name="retail",
    brand="ShopRight",
    agent_id="shopright-care-v2",
    prompt=(
        "You are Max, a customer care voice agent for ShopRight. Help callers with order status, returns "
        "and exchanges. Ask for the order number first. Items can be returned within 30 days of delivery "
        "for a full refund to the original payment method; exchanges ship free. Be warm and brief."
    ),
    flow_nodes=("greeting", "identify_order", "order_details", "policy", "process_request", "wrap_up"),
    passages={
        "return_policy": Passage(
            "Returns: most items can be returned within 30 days of delivery for a full refund. Refunds go "
            "to the original payment method within 5 business days after the warehouse receives the item. "
            "Defective items can be returned with a prepaid label at no cost.",
            "Since it's defective, the prepaid label is free, and the refund goes to your original payment "
            "method within 5 business days after the warehouse receives it.",
        ),
        "exchange_policy": Passage(
            "Exchanges: shoes and apparel can be exchanged for a different size within 30 days. The new "
            "size ships free as soon as the original item is scanned by the carrier.",
            "The new size ships free as soon as the carrier scans the pair you send back.",
        ),
        "shipping_policy": Passage(
            "Shipping: standard orders arrive in 3 to 5 business days. Orders delayed at the carrier are "
            "tracked daily and customers are notified by email of any change in the delivery date.",
            "If anything changes with the carrier, you'll get an email about the new delivery date.",
        ),
    },
    greeting="Hi, you've reached ShopRight customer care. This is Max. What can I do for you?",
    closing_user=("That's all, thank you so much.", "Okay, great. Thanks, bye."),
    closing_agent="Happy to help, {first_name}. Have a good one!",
    transfer_target="shopright-escalations",
    transfer_request="I'd really rather speak with a supervisor about this.",
    ungrounded_lines=(
        "You'll also get a {bogus_price} coupon for your next order.",
        "Our warehouse processes returns until {bogus_time} every day.",
    ),
    contradiction=(
        "The refund will go back to your original card.",
        "The refund will not go back to your original card.",
    ),
    misheard={
        "return": "retain",
        "blender": "bender",
        "order": "older",
        "refund": "re fund",
        "label": "table",
        "size": "sighs",
    },
)


def retail_facts(rng: Random) -> Facts:
    item, price = rng.choice(PRODUCTS)
    shoe, shoe_price = rng.choice(SHOES)
    first = person(rng)
    return {
        **first,
        "order_id": f"W{digits(rng, 7)}",
        "item": item,
        "item_price": price,
        "shoe": shoe,
        "shoe_price": shoe_price,
        "old_size": str(rng.choice((8, 9, 10, 11))),
        "new_size": str(rng.choice((7, 8, 9, 10, 11, 12))),
        "delivery_date": rng.choice(MONTH_DAYS),
        "eta_date": rng.choice(MONTH_DAYS),
        "carrier": rng.choice(("UPS", "FedEx", "USPS")),
        "return_id": f"R{digits(rng, 6)}",
        "email": f"{first['first_name'].lower()}@example.com",
    }


def retail_db(f: Facts, done: bool) -> dict[str, Any]:
    orders = {
        f["order_id"]: {
            "status": "return_requested" if done else "delivered",
            "items": [{"name": f["item"], "price": amount(f["item_price"]), "quantity": 1}],
            "total": amount(f["item_price"]),
            "gift_message": "null",
        }
    }
    notifications = [{"id": "N1", "kind": "shipment_delivered", "order": f["order_id"]}]
    db: dict[str, Any] = {"orders": orders, "notifications": notifications}
    if done:
        notifications.append({"id": "N2", "kind": "return_label", "order": f["order_id"]})
        db["returns"] = {
            f["return_id"]: {"order": f["order_id"], "reason": "defective", "refund": amount(f["item_price"])}
        }
    return db


def exchange_db(f: Facts, done: bool) -> dict[str, Any]:
    size = f["new_size"] if done else f["old_size"]
    return {
        "orders": {
            f["order_id"]: {
                "status": "delivered",
                "items": [{"name": f["shoe"], "size": size, "price": amount(f["shoe_price"])}],
            }
        },
        "notifications": [{"id": "N1", "kind": "exchange_created" if done else "shipment_delivered"}],
    }


RETAIL_TOOLS = tools(
    Tool(
        "get_order",
        lambda f: {"order_id": f["order_id"]},
        lambda f: {
            "order_id": f["order_id"],
            "status": "delivered",
            "delivered_on": f["delivery_date"],
            "items": [
                {"name": f["item"], "price": amount(f["item_price"])},
                {"name": f["shoe"], "size": f["old_size"], "price": amount(f["shoe_price"])},
            ],
        },
    ),
    Tool(
        "create_return",
        lambda f: {"order_id": f["order_id"], "item": f["item"], "reason": "defective"},
        lambda f: {"return_id": f["return_id"], "refund_amount": amount(f["item_price"]), "label_sent_to": f["email"]},
    ),
    Tool(
        "create_exchange",
        lambda f: {"order_id": f["order_id"], "item": f["shoe"], "new_size": f["new_size"]},
        lambda f: {
            "success": True,
            "exchange_id": f["return_id"].replace("R", "X"),
            "ships": "when the original is scanned",
        },
    ),
    Tool(
        "track_order",
        lambda f: {"order_id": f["order_id"]},
        lambda f: {
            "carrier": f["carrier"],
            "status": "in_transit",
            "estimated_delivery": f["eta_date"],
            "last_scan": "regional hub",
        },
    ),
)

RETAIL_TASKS = (
    Task(
        RETAIL,
        "return",
        "Start a return for a defective item with a prepaid label.",
        ("support",),
        retail_facts,
        ("customer_name", "email"),
        (
            Step(
                "Hi, I'd like to return the {item} I ordered.",
                "Sure, I can help with a return. What's the order number?",
                node="identify_order",
            ),
            Step(
                "It's {order_id}.",
                "Got it. I see the {item} for {item_price}, delivered on {delivery_date}.",
                tool="get_order",
                node="order_details",
            ),
            Step(
                "It stopped working after two days. Can I still send it back?",
                "Yes, it's still within the return window, so you can send it back for a full refund.",
                kb="return_policy",
                node="policy",
            ),
            Step(
                "Great, please start the return.",
                "Your return {return_id} is set up. A prepaid label is on its way to {email}, and you'll get "
                "{item_price} back once we receive it.",
                tool="create_return",
                node="process_request",
                action=True,
            ),
        ),
        RETAIL_TOOLS,
        success_signals=("is_action_match", "db_state_match", "nl_assertion", "clean_exit"),
        reference=lambda f: [{"order_id": f["order_id"], "item": f["item"], "reason": "defective"}],
        nl_assertions=("The agent confirmed the refund amount.", "The agent said where the return label was sent."),
        db=retail_db,
    ),
    Task(
        RETAIL,
        "exchange",
        "Exchange a pair of shoes for a different size.",
        ("support",),
        retail_facts,
        ("customer_name",),
        (
            Step(
                "Hi, the {shoe} I got are too small. Can I swap them for a size {new_size}?",
                "Absolutely. Can I have the order number?",
                node="identify_order",
            ),
            Step(
                "Sure, {order_id}.",
                "Thanks. I see the {shoe} in size {old_size}, delivered on {delivery_date}.",
                tool="get_order",
                node="order_details",
            ),
            Step(
                "Do I have to pay for shipping on the new pair?",
                "Good news, exchanges ship free.",
                kb="exchange_policy",
                node="policy",
            ),
            Step(
                "Perfect, let's do the exchange then.",
                "All set. A size {new_size} pair of the {shoe} is reserved for you, and a return label is in your "
                "email.",
                tool="create_exchange",
                node="process_request",
                action=True,
            ),
        ),
        RETAIL_TOOLS,
        success_signals=("is_action_match", "db_state_match", "judge_passed", "clean_exit"),
        reference=lambda f: {"order_id": f["order_id"], "item": f["shoe"], "new_size": f["new_size"]},
        db=exchange_db,
        wrong_facts=lambda f: {**f, "new_size": f["old_size"]},
    ),
    Task(
        RETAIL,
        "order_status",
        "Tell the caller where a late order is.",
        ("support",),
        retail_facts,
        ("customer_name",),
        (
            Step(
                "Hi, I'm calling about an order that hasn't arrived yet.",
                "I'm sorry it's running late. What's the order number?",
                node="identify_order",
            ),
            Step(
                "It's {order_id}.",
                "Thanks. It's with {carrier} and it's expected to arrive on {eta_date}.",
                tool="track_order",
                node="order_details",
            ),
            Step(
                "Will I hear from you if it gets delayed again?",
                "Yes, we'll keep an eye on it.",
                kb="shipping_policy",
                node="policy",
            ),
        ),
        RETAIL_TOOLS,
        success_signals=("clean_exit",),
        nl_assertions=("The agent gave the caller an expected delivery date.",),
    ),
)


# ============================================================================================ telecom

TELECOM = Domain(
    name="telecom",
    brand="Connectly",
    agent_id="connectly-support-v5",
    prompt=(
        "You are Riley, a support voice agent for Connectly Mobile. Verify the account number and PIN "
        "before any change. You can activate replacement SIM cards, turn on international roaming passes "
        "and credit disputed charges up to $50. A new SIM can take up to 10 minutes to come online. "
        "Transfer fraud concerns to the fraud team."
    ),
    flow_nodes=("greeting", "verify_identity", "account_review", "troubleshoot", "apply_change", "wrap_up"),
    passages={
        "sim_activation": Passage(
            "SIM activation: after a SIM swap, the customer should restart the phone and make sure airplane "
            "mode is off. Activation normally completes within 10 minutes; if there is still no service "
            "after that, reset the network settings.",
            "Please restart the phone and make sure airplane mode is off. If the phone still shows zero bars "
            "after 10 minutes, reset the network settings.",
        ),
        "roaming_passes": Passage(
            "International roaming: the Travel Pass costs $12 per day and includes unlimited talk and text "
            "plus the plan's data allowance. Charges apply only on days the phone is used abroad.",
            "The Travel Pass is $12 per day, and you're only charged on days you actually use the phone abroad.",
        ),
        "billing_disputes": Passage(
            "Billing disputes: agents may credit disputed overage charges up to $50 without approval. "
            "Credits appear on the next bill. Larger disputes go to the billing team.",
            "I can credit that directly, and it will show up on your next bill.",
        ),
    },
    greeting="Connectly support, this is Riley. What can I help you with today?",
    closing_user=("Awesome, thanks for sorting that out.", "Okay, that's everything. Thank you."),
    closing_agent="Glad I could help, {first_name}. Take care!",
    transfer_target="connectly-fraud-team",
    transfer_request="Hold on, I think someone may have accessed my account. Can I talk to the fraud team?",
    ungrounded_lines=(
        "I've applied a {bogus_price} loyalty credit to your next bill as well.",
        "The network upgrade in your area will finish at {bogus_time} tonight.",
    ),
    contradiction=(
        "Your current plan includes international roaming.",
        "Your current plan doesn't include international roaming.",
    ),
    misheard={
        "SIM": "sin",
        "roaming": "roman",
        "card": "car",
        "charge": "change",
        "account": "a count",
        "bill": "bell",
    },
    dual_side=True,
)


def telecom_facts(rng: Random) -> Facts:
    line = digits(rng, 4)
    iccid = "8901260" + digits(rng, 12)
    return {
        **person(rng),
        "account_number": digits(rng, 8),
        "pin": digits(rng, 4),
        "line_id": f"L-{line}",
        "line_last4": line,
        "iccid": iccid,
        "device_iccid": iccid,  # the card in the caller's phone: what the agent must activate
        "country": rng.choice(COUNTRIES),
        "trip_start": rng.choice(MONTH_DAYS),
        "overage_charge": f"${rng.randint(12, 48)}.00",
        "plan_name": rng.choice(("Unlimited Plus", "Essentials 15", "Family Share")),
        "monthly_price": rng.choice(("$45", "$60", "$35")),
    }


NO_SIM = "8901260000000000000"


def telecom_db(f: Facts, done: bool) -> dict[str, Any]:
    task = f["task"]
    line = {
        "sim_iccid": f["iccid"] if done and task == "sim_swap" else NO_SIM,
        "sim_status": "pending" if task == "sim_swap" and not done else "active",
        "roaming": done and task == "roaming",
        "roaming_country": f["country"] if done and task == "roaming" else "none",
    }
    credits = (
        [{"amount": amount(f["overage_charge"]), "reason": "overage dispute"}]
        if done and task == "bill_dispute"
        else []
    )
    return {
        "accounts": {f["account_number"]: {"holder": f["customer_name"], "plan": f["plan_name"], "credits": credits}},
        "lines": {f["line_id"]: line},
        "system_accounts": [
            {"system": "billing", "id": f["account_number"]},
            {"system": "provisioning", "id": f["line_id"]},
        ],
        "group_memberships": [{"group": "autopay"}, {"group": "postpaid"}],
    }


def telecom_user_db(f: Facts, done: bool) -> dict[str, Any]:
    """The simulated user's phone: without a working SIM there is no service."""
    no_service = f["task"] == "sim_swap" and not done
    return {
        "device": {
            "sim_iccid": f["device_iccid"],
            "airplane_mode": False,
            "network_status": "no_service" if no_service else "connected",
            "roaming_enabled": done and f["task"] == "roaming",
        },
        "asset_recoveries": [],
    }


TELECOM_TOOLS = tools(
    Tool(
        "verify_identity",
        lambda f: {"account_number": f["account_number"], "pin": f["pin"]},
        lambda f: {"verified": True, "line_id": f["line_id"], "plan": f["plan_name"]},
    ),
    Tool(
        "activate_sim",
        lambda f: {"account_number": f["account_number"], "line_id": f["line_id"], "iccid": f["iccid"]},
        lambda f: {"status": "completed", "online_within_minutes": 10},
    ),
    Tool(
        "enable_roaming",
        lambda f: {"account_number": f["account_number"], "country": f["country"], "pass": "travel_pass"},
        lambda f: {"success": True, "pass": "Travel Pass", "daily_price": 12, "starts": f["trip_start"]},
    ),
    Tool(
        "get_bill",
        lambda f: {"account_number": f["account_number"]},
        lambda f: {"plan": f["plan_name"], "monthly_price": f["monthly_price"], "overage": amount(f["overage_charge"])},
    ),
    Tool(
        "credit_account",
        lambda f: {
            "account_number": f["account_number"],
            "amount": amount(f["overage_charge"]),
            "reason": "overage dispute",
        },
        lambda f: {"success": True, "credited": amount(f["overage_charge"])},
    ),
    Tool("toggle_airplane_mode", lambda f: {"enabled": False}, lambda f: {"airplane_mode": False}, side="user"),
    Tool("restart_device", lambda f: {}, lambda f: {"network_status": "connected"}, side="user"),
)


def telecom_assertions(
    func_name: str, path: str, value: Callable[[Facts], Any], message: str
) -> Callable[[Facts], list[dict[str, Any]]]:
    """The task's own check on the agent's DB, the phone having service, and no stray system account."""

    def build(f: Facts) -> list[dict[str, Any]]:
        return [
            {
                "func_name": func_name,
                "side": "agent",
                "arguments": {"path": path.format(**f)},
                "assert_value": value(f),
                "message": message,
            },
            {
                "func_name": "field_equals",
                "side": "user",
                "arguments": {"path": "device.network_status"},
                "assert_value": "connected",
                "message": "The caller's phone has service",
            },
            {
                "func_name": "count",
                "side": "agent",
                "arguments": {"path": "system_accounts"},
                "assert_value": 2,
                "message": "No system account was added or removed",
            },
        ]

    return build


TELECOM_TASKS = (
    Task(
        TELECOM,
        "sim_swap",
        "Activate a replacement SIM card on the caller's line.",
        ("support", "telecom"),
        lambda rng: {**telecom_facts(rng), "task": "sim_swap"},
        ("customer_name", "line_last4", "plan_name"),
        (
            Step(
                "Hi, I put in a new SIM card and now my phone says no service.",
                "I can help activate it. Can I have the account number and the PIN on the account?",
                node="verify_identity",
            ),
            Step(
                "The account number is {account_number} and the PIN is {pin}.",
                "Thank you, you're verified. I see the line ending in {line_last4}.",
                tool="verify_identity",
                node="account_review",
            ),
            Step(
                "The number on the new card is {iccid}.",
                "The new SIM is now linked to your line. It can take up to 10 minutes to come online.",
                tool="activate_sim",
                node="apply_change",
                action=True,
                user_tool="toggle_airplane_mode",
            ),
            Step(
                "Should I restart my phone?",
                "Yes, a restart usually does it.",
                kb="sim_activation",
                node="troubleshoot",
                user_tool="restart_device",
            ),
        ),
        TELECOM_TOOLS,
        success_signals=("db_state_match", "db_state_assertion", "nl_assertion", "clean_exit"),
        reference=lambda f: {"account_number": f["account_number"], "iccid": f["iccid"]},
        nl_assertions=(
            "The agent verified the PIN before activating the SIM.",
            "The agent told the caller how long activation can take.",
        ),
        db=telecom_db,
        user_db=telecom_user_db,
        db_assertions=telecom_assertions(
            "field_equals", "lines.{line_id}.sim_iccid", lambda f: f["iccid"], "The new SIM is on the line"
        ),
        wrong_facts=lambda f: {**f, "iccid": f["iccid"][:-1] + str((int(f["iccid"][-1]) + 1) % 10)},
    ),
    Task(
        TELECOM,
        "roaming",
        "Turn on an international roaming pass for an upcoming trip.",
        ("support", "telecom"),
        lambda rng: {**telecom_facts(rng), "task": "roaming"},
        ("customer_name", "line_last4", "plan_name", "monthly_price"),
        (
            Step(
                "Hi, I'm traveling to {country} on {trip_start} and I want my phone to work there.",
                "Happy to set that up. Can I have your account number and PIN?",
                node="verify_identity",
            ),
            Step(
                "Sure, account {account_number}, PIN {pin}.",
                "Thanks, you're verified. You're on the {plan_name} plan at {monthly_price} a month.",
                tool="verify_identity",
                node="account_review",
            ),
            Step(
                "How much does it cost to use it abroad?",
                "We have a Travel Pass for that.",
                kb="roaming_passes",
                node="troubleshoot",
            ),
            Step(
                "Okay, please turn it on.",
                "Done. The Travel Pass is active for {country} starting {trip_start}.",
                tool="enable_roaming",
                node="apply_change",
                action=True,
            ),
        ),
        TELECOM_TOOLS,
        success_signals=("db_state_match", "db_state_assertion", "clean_exit"),
        reference=lambda f: {"account_number": f["account_number"], "country": f["country"], "pass": "travel_pass"},
        db=telecom_db,
        user_db=telecom_user_db,
        db_assertions=telecom_assertions(
            "field_equals", "lines.{line_id}.roaming", lambda f: True, "Roaming is on for the line"
        ),
        wrong_facts=lambda f: {**f, "country": "Canada" if f["country"] != "Canada" else "Mexico"},
    ),
    Task(
        TELECOM,
        "bill_dispute",
        "Credit a disputed data overage charge.",
        ("billing", "telecom"),
        lambda rng: {**telecom_facts(rng), "task": "bill_dispute"},
        ("customer_name", "plan_name", "monthly_price"),
        (
            Step(
                "Hi, my bill has an overage charge of {overage_charge} and I never went over my data.",
                "Let me look into that. What's your account number and PIN?",
                node="verify_identity",
            ),
            Step(
                "Account {account_number}, and the PIN is {pin}.",
                "Thanks. I can see the {overage_charge} overage on this month's bill, on top of the {monthly_price} "
                "plan.",
                tool="get_bill",
                node="account_review",
            ),
            Step(
                "Can you take it off?",
                "Yes, I've credited the {overage_charge} back to your account.",
                tool="credit_account",
                kb="billing_disputes",
                node="apply_change",
                action=True,
            ),
        ),
        TELECOM_TOOLS,
        success_signals=("is_action_match", "db_state_match", "db_state_assertion", "clean_exit"),
        reference=lambda f: [{"account_number": f["account_number"], "amount": amount(f["overage_charge"])}],
        db=telecom_db,
        user_db=telecom_user_db,
        db_assertions=telecom_assertions(
            "count", "accounts.{account_number}.credits", lambda f: 1, "One credit was applied"
        ),
        wrong_facts=lambda f: {**f, "overage_charge": "$10.00"},
    ),
)


# ============================================================================ production-only domains

BILLING = Domain(
    name="billing",
    brand="Brightline Energy",
    agent_id="brightline-billing-v1",
    prompt=(
        "You are Sam, the billing voice assistant for Brightline Energy. Look up balances, set up payment "
        "plans and take payments. Balances over $100 can be split into 3 monthly installments with no fee. "
        "Never read out full card numbers. Transfer to a billing specialist when the caller asks for a person."
    ),
    flow_nodes=("greeting", "identify_account", "balance", "plan_options", "confirm_plan", "wrap_up"),
    passages={
        "payment_plans": Passage(
            "Payment plans: customers with a balance over $100 may split it into 3 monthly installments with "
            "no fee. A late payment after the due date adds a 1.5% fee. Plans start on the next billing date.",
            "Balances over $100 can be split into 3 monthly installments free of charge, but a late payment "
            "adds a 1.5% fee.",
        ),
        "autopay": Passage(
            "Autopay: customers enrolled in autopay receive a $2 monthly discount. Autopay draws the full "
            "balance on the due date from the card or bank account on file.",
            "If you sign up for autopay, you'd get a $2 monthly discount.",
        ),
    },
    greeting="Thanks for calling Brightline Energy billing, this is Sam. How can I help?",
    closing_user=("Thanks, that really helps.", "Okay, thank you. Bye."),
    closing_agent="You're welcome, {first_name}. Have a nice day!",
    transfer_target="+1 415 555 0199",
    transfer_request="Can I just talk to a real person, please?",
    ungrounded_lines=(
        "There's also a {bogus_price} hardship credit I've put on your account.",
        "Our billing office is open until {bogus_time} if you'd like to pay in person.",
    ),
    contradiction=(
        "The payment plan includes a setup fee.",
        "The payment plan doesn't include a setup fee.",
    ),
    misheard={"bill": "bell", "payment": "pavement", "split": "spit", "balance": "ballots", "account": "a count"},
)


def billing_facts(rng: Random) -> Facts:
    cents = rng.randint(10_500, 62_000)
    installment_cents = -(-cents // 3)
    return {
        **person(rng),
        "account_number": digits(rng, 9),
        "balance": f"${cents // 100}.{cents % 100:02d}",
        "installment": f"${installment_cents // 100}.{installment_cents % 100:02d}",
        "due_date": rng.choice(MONTH_DAYS),
        "first_payment_date": rng.choice(MONTH_DAYS),
        "plan_id": f"PP-{digits(rng, 5)}",
    }


BILLING_TOOLS = tools(
    Tool(
        "get_balance",
        lambda f: {"account_number": f["account_number"]},
        lambda f: {"balance": amount(f["balance"]), "due_date": f["due_date"], "autopay": False},
    ),
    Tool(
        "create_payment_plan",
        lambda f: {"account_number": f["account_number"], "installments": 3},
        lambda f: {
            "plan_id": f["plan_id"],
            "installment": amount(f["installment"]),
            "first_payment": f["first_payment_date"],
        },
    ),
)

BILLING_TASKS = (
    Task(
        BILLING,
        "payment_plan",
        "Split an energy bill into installments.",
        ("billing",),
        billing_facts,
        ("customer_name", "account_number", "balance", "due_date", "installment"),
        (
            Step(
                "Hi, I got a bill for {balance} and I can't pay it all at once.",
                "I understand. Can I have your account number to take a look?",
                node="identify_account",
            ),
            Step(
                "It's {account_number}.",
                "Thanks, {first_name}. Your balance is {balance}, due on {due_date}.",
                tool="get_balance",
                node="balance",
            ),
            Step(
                "Is there any way to split it up?",
                "Yes, we can split it into 3 monthly payments of {installment}.",
                kb="payment_plans",
                node="plan_options",
            ),
            Step(
                "Okay, let's set that up.",
                "Done. Your first payment of {installment} is due on {first_payment_date}.",
                tool="create_payment_plan",
                node="confirm_plan",
                action=True,
            ),
        ),
        BILLING_TOOLS,
        scenario=False,
    ),
)

CLINIC = Domain(
    name="clinic",
    brand="Maple Street Clinic",
    agent_id="maple-frontdesk-v2",
    prompt=(
        "You are Jordan, the front desk voice assistant for Maple Street Clinic. Book, move and cancel "
        "appointments. Confirm the patient's date of birth first. Ask patients to arrive 15 minutes early. "
        "Cancellations with less than 24 hours notice carry a $25 fee. Never give medical advice."
    ),
    flow_nodes=("greeting", "identify_patient", "current_appointment", "find_slot", "confirm_booking", "wrap_up"),
    passages={
        "cancellation_policy": Passage(
            "Cancellation policy: appointments moved or cancelled with less than 24 hours notice carry a $25 "
            "late-change fee. Patients should arrive 15 minutes early to complete check-in.",
            "Since it's more than 24 hours away the change is free, and please arrive 15 minutes early for check-in.",
        ),
        "parking": Passage(
            "Parking: free patient parking is available in the garage behind the clinic on Maple Street. "
            "Bring the ticket to the front desk for validation.",
            "Parking is free in the garage behind the clinic, just bring the ticket to the front desk.",
        ),
    },
    greeting="Maple Street Clinic, this is Jordan. How can I help you?",
    closing_user=("That's it. Thanks so much.", "Great, thank you. Bye bye."),
    closing_agent="You're welcome. See you soon, {first_name}!",
    transfer_target="maple-nurse-line",
    transfer_request="Actually, I have a question about my medication. Can I speak to a nurse?",
    ungrounded_lines=(
        "Your copay for this visit will be {bogus_price}.",
        "Dr. {doctor} usually runs on time and sees the last patient at {bogus_time}.",
    ),
    contradiction=(
        "This visit requires a referral from your insurance.",
        "This visit does not require a referral from your insurance.",
    ),
    misheard={
        "appointment": "a point meant",
        "Thursday": "thirsty",
        "doctor": "doctors",
        "move": "moved",
        "week": "weak",
    },
)


def clinic_facts(rng: Random) -> Facts:
    current, option_a, option_b = rng.sample(WEEKDAY_SLOTS, 3)
    return {
        **person(rng),
        "doctor": rng.choice(DOCTORS),
        "date_of_birth": f"{rng.choice(('March', 'June', 'July', 'December'))} {rng.randint(2, 28)}, "
        f"{rng.randint(1950, 2004)}",
        "appointment_time": current,
        "slot_a": option_a,
        "new_slot": option_b,
        "appointment_id": f"A-{digits(rng, 6)}",
    }


CLINIC_TOOLS = tools(
    Tool(
        "find_appointment",
        lambda f: {"patient_name": f["customer_name"], "date_of_birth": f["date_of_birth"]},
        lambda f: {
            "appointment_id": f["appointment_id"],
            "provider": f"Dr. {f['doctor']}",
            "time": f["appointment_time"],
        },
    ),
    Tool(
        "list_open_slots",
        lambda f: {"provider": f["doctor"], "week": "next"},
        lambda f: {"slots": [f["slot_a"], f["new_slot"]]},
    ),
    Tool(
        "reschedule_appointment",
        lambda f: {"appointment_id": f["appointment_id"], "new_time": f["new_slot"]},
        lambda f: {"success": True, "time": f["new_slot"]},
    ),
)

CLINIC_TASKS = (
    Task(
        CLINIC,
        "reschedule",
        "Move a patient's appointment to another slot.",
        ("support", "healthcare"),
        clinic_facts,
        ("customer_name", "appointment_time"),
        (
            Step(
                "Hi, I need to move my appointment with Dr. {doctor}.",
                "Sure thing. Can I have your date of birth to find it?",
                node="identify_patient",
            ),
            Step(
                "It's {date_of_birth}.",
                "Thanks, {first_name}. I see you're booked with Dr. {doctor} on {appointment_time}.",
                tool="find_appointment",
                node="current_appointment",
            ),
            Step(
                "Do you have anything else that week?",
                "I have {slot_a} or {new_slot}.",
                tool="list_open_slots",
                node="find_slot",
            ),
            Step(
                "{new_slot} works for me.",
                "You're all set for {new_slot} with Dr. {doctor}.",
                tool="reschedule_appointment",
                kb="cancellation_policy",
                node="confirm_booking",
                action=True,
            ),
        ),
        CLINIC_TOOLS,
        scenario=False,
    ),
)

SCENARIO_TASKS: tuple[Task, ...] = AIRLINE_TASKS + RETAIL_TASKS + TELECOM_TASKS
FLOW_AGENTS = frozenset({AIRLINE.agent_id, TELECOM.agent_id, CLINIC.agent_id})

# Agent replies that make a call worse, whatever the domain.
CONFUSED_REPLIES = (
    "Sorry, I didn't understand that. Could you say it again?",
    "I'm sorry, I didn't catch that. Could you repeat it?",
    "Sorry, I didn't get that. Could you repeat that for me?",
)
MUMBLES = (
    "Uh, yeah, so the, um... hang on a second.",
    "Wait, what? No, I mean, the, uh...",
    "Mm, hold on, my kid is, um, sorry.",
)
REPEAT_REQUESTS = ("Sorry, what was that?", "Can you say that again?", "Sorry, you cut out there.")
ROBOTIC_OPENERS = (
    "As an AI, I don't have access to your card details, but I can still help with this.",
    "As a language model, I can't make promises, but I'll do my best.",
    "As an AI assistant, I don't have personal opinions, but that sounds like a good choice.",
)
LOOP_USER = ("Sorry, can you check that again?", "That doesn't sound right. Can you look again?", "Hmm, are you sure?")
# Said after the action: on its own over 60 words, so the turn is far too long for a phone call.
LONG_WINDUPS = (
    "I just want to make sure you have everything you need today, so please feel free to reach out "
    "again if anything at all comes up, whether that's through the app, the website, or by calling us back "
    "on this number, and our team will be more than happy to take another look and help you out with "
    "whatever you need.",
    "And before you go, I'd also like to mention that everything we talked about today is saved on your "
    "profile, so if you call back later any of our agents will be able to see the notes from this call and "
    "pick up right where we left off, and you can also review the details yourself whenever you like, "
    "which a lot of our customers find really convenient.",
)
LOOP_AGENT = ("Let me check that again for you.", "One moment, I'm looking at it again.")
BOGUS_PRICES = ("$15", "$20", "$35", "$40", "$60", "$80", "$100", "$150")
BOGUS_TIMES = ("11:45pm", "5:50am", "9:55pm", "10:35pm", "6:25am")


def flow_document(domain: Domain) -> dict[str, Any]:
    """A Pipecat Flows configuration: the nodes and where each may go next."""
    nodes = domain.flow_nodes
    return {
        "initial_node": nodes[0],
        "nodes": {
            name: {
                "task": f"{name.replace('_', ' ').capitalize()} step of the {domain.brand} call.",
                "next": [nodes[i + 1]] if i + 1 < len(nodes) else [],
            }
            for i, name in enumerate(nodes)
        },
    }


def fill(template: str, facts: Facts) -> str:
    return template.format(**facts)


# Production traffic: which tasks real callers bring, and how often (relative weights).
PRODUCTION_MIX: tuple[tuple[Task, int], ...] = (
    (BILLING_TASKS[0], 30),
    (CLINIC_TASKS[0], 25),
    (RETAIL_TASKS[2], 12),
    (RETAIL_TASKS[0], 8),
    (TELECOM_TASKS[1], 10),
    (TELECOM_TASKS[2], 15),
)
