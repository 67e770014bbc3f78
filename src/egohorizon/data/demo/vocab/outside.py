"""Out of the house: commuting and groceries."""

from egohorizon.data.demo.grammar import a, activity, anyorder, opt, pick, rep, step, task

# --- commuting -----------------------------------------------------------------------------------------
BIKE_UNLOCK = a("unlock my bike|take the lock off my bike|get my bike out of the rack", "bike lock", 15, 35,
                place="street")
CYCLE = a("cycle along the bike lane|ride my bike through traffic|cycle down the main road", "bike handlebar", 90, 180,
          place="bike lane")
BIKE_LIGHT = a("stop at a red light on the bike|wait at the junction|brake for a crossing", "bike traffic_light", 15, 45,
               place="bike lane")
BIKE_LOCK = a("lock my bike at the rack|park and lock the bike|chain the bike to the rack", "bike lock", 15, 35,
              place="street")
step("cycle_leg", "cycle a stretch of the way|ride my bike|cycle through town", [CYCLE, opt(BIKE_LIGHT, 0.6), CYCLE],
     place="bike lane", interruptible=False)
step("start_cycling", "get on my bike|set off on my bike|unlock the bike and ride off", [BIKE_UNLOCK, CYCLE],
     place="street", interruptible=False)
step("arrive_by_bike", "park my bike at {destination}|arrive by bike|lock up my bike", [CYCLE, BIKE_LOCK],
     place="street", interruptible=False)
task("cycle_trip", "cycle to {destination}|ride my bike to {destination}|bike over to {destination}",
     ["start_cycling", rep("cycle_leg", 1, 2), "arrive_by_bike"], place="bike lane")

STOP = a("walk to the tram stop|wait at the tram stop|check when the next tram comes", "tram_stop", 40, 120,
         place="tram stop", screen="phone:transit")
BOARD = a("get on the tram and tap my card|board the tram|step onto the tram", "tram card", 10, 25, place="tram")
RIDE = a("ride the tram looking out of the window|stand in the tram|sit on the tram", "window", 90, 180, place="tram")
GET_OFF = a("get off the tram at my stop|step off the tram|leave the tram", "tram_door", 10, 25, place="tram")
WALK_TOWN = a("walk down the street to {destination}|walk the last bit to {destination}|walk along the pavement",
              "", 60, 150, place="street")
step("wait_tram", "wait for the tram|get to the tram stop|walk to the stop", [WALK_TOWN, STOP], place="tram stop")
step("ride_tram", "ride the tram|take the tram into town|travel on the tram",
     [BOARD, RIDE, opt(RIDE, 0.6), GET_OFF], place="tram")
task("tram_trip", "take the tram to {destination}|ride the tram to {destination}|go to {destination} by tram",
     ["wait_tram", "ride_tram", opt(step("walk_from_tram", "walk from the stop to {destination}|walk the rest of "
                                         "the way|walk to {destination}", [WALK_TOWN, WALK_TOWN], place="street"), 0.7)],
     place="tram")
task("walk_trip", "walk to {destination}|go to {destination} on foot|walk over to {destination}",
     [step("walk_leg", "walk through town|walk along the streets|walk part of the way",
           [WALK_TOWN, WALK_TOWN, opt(WALK_TOWN, 0.5)], place="street"), opt("walk_leg", 0.5)], place="street")
task("ride_podcast", "listen to a podcast on the way|put on a podcast for the trip|listen to music on the way",
     [step("start_podcast", "pick a podcast episode|choose music for the trip|start a podcast",
           [a("choose a podcast episode on my phone|pick a playlist|put in my earphones and press play",
              "phone earphones", 8, 25, screen="phone:music"),
            a("set off down the street listening|head out with my earphones in|walk off down the street",
              "earphones", 30, 90, place="street")], place="street")], place="street")
activity("commute", "travel to {destination}|commute to {destination}|make my way to {destination}",
         [opt("ride_podcast", 0.25), pick("cycle_trip", "tram_trip", "walk_trip", weights=(3, 2, 1))], place="street",
         interruptible=False)

# --- groceries -----------------------------------------------------------------------------------------------
BASKET = a("take a basket at the entrance|grab a shopping trolley|pick up a basket", "basket", 5, 12)
LIST = a("check my shopping list on my phone|look at the shopping list|tick items off my list", "phone", 5, 15,
         screen="phone:list")
VEG = a("pick out some {produce}|choose {produce} from the shelf|put {produce} in the basket", "{produce} basket",
        20, 60)
SHELF = a("find {item} on the shelf|take {item} off the shelf|compare prices of {item}", "{item} shelf", 15, 45)
CHECKOUT_Q = a("queue at the checkout|wait in line to pay|line up at the till", "basket", 30, 90)
SCAN = a("put my items on the belt|scan my items at the self-checkout|bag the groceries", "groceries", 30, 80)
PAY_SHOP = a("pay with my card|tap my phone to pay|pay at the till", "card", 8, 20, speech="checkout")
step("produce_section", "get fruit and vegetables|shop for vegetables|pick the fresh produce",
     [BASKET, opt(LIST, 0.5), VEG, rep(VEG, 1, 2)], place="supermarket",
     slots={"produce": "@produce"})
step("aisles", "get {item} and other things|walk through the aisles|pick up the rest of my list",
     [SHELF, opt(LIST, 0.4), SHELF, opt(SHELF, 0.5)], place="supermarket", slots={"item": "@item"})
step("checkout", "pay at the checkout|check out and pay|pay for the groceries", [CHECKOUT_Q, SCAN, PAY_SHOP],
     place="supermarket")
task("shop_items", "buy groceries at the supermarket|do the grocery shopping|shop for food",
     ["produce_section", rep("aisles", 1, 2)], place="supermarket")
task("pay_groceries", "pay for my groceries|check out at the supermarket|pay and pack the bags", ["checkout"],
     place="supermarket")
UNPACK = a("unpack the shopping bags|take the groceries out of the bag|empty the shopping bag", "shopping_bag", 20, 50,
           place="kitchen")
PUT_FRIDGE = a("put the vegetables in the fridge|stack things in the fridge|put the milk in the fridge",
               "fridge groceries", 20, 60, place="kitchen")
PUT_CUPBOARD = a("put the pasta and tins in the cupboard|stock the cupboard|put the cereal away",
                 "cupboard groceries", 15, 45, place="kitchen")
task("put_away_groceries", "put away the groceries|organise the shopping|put the food away",
     [step("unpack_shopping", "unpack the groceries|sort out the shopping|stock the fridge and cupboards",
           [UNPACK, anyorder(PUT_FRIDGE, PUT_CUPBOARD)], place="kitchen")], place="kitchen")
activity("groceries", "buy groceries|do the weekly shop|go grocery shopping",
         ["shop_items", "pay_groceries"],
         place="supermarket")
activity("unpack_groceries", "put away the groceries at home|organise the shopping at home|unpack the shopping",
         ["put_away_groceries"], place="kitchen")
