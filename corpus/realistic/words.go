package realistic

import "strings"

// The word lists are plain text so that they are easy to extend; they are
// parsed once into the read-only vocab below. Together with the inflected
// forms (plurals, third person, past, participle, gerund) they give several
// thousand distinct surface words, enough that paragraphs built from them do
// not repeat word 3-grams by accident.

const nounList = `
ability absence academy access accident account accuracy achievement acid action activity actor
adapter addition address adjustment administrator adoption advance advantage adventure advertisement
advice agency agenda agent agreement aircraft airline airport alarm album alert algorithm alias
allocation allowance alternative ambition amount analyst anchor angle animal announcement annotation
answer anxiety apartment apology app appeal appetite apple application appointment approach approval
archive area argument arm arrangement array arrival article artifact artist aspect assembly assertion
assessment asset assignment assistant association assumption atmosphere attachment attack attempt
attendance attention attitude attorney attribute audience audit author authority automation avenue
average award awareness backend backlog backup badge bag balance ball banana band bank banner bar
barrier base basement basket batch bath battery battle beach beam bean bear bed bedroom beef
beginning behavior belief bell belt bench benchmark benefit bet bicycle bid bill binary bird birthday
bit blade blanket block blog blood board boat body bolt bond bone bonus book booking boot border
bottle bottleneck bottom boundary bowl box boy bracket brain branch brand bread breakfast breakdown
breath brick bridge brief broker brother browser bubble bucket budget buffer bug builder building
bulletin bundle burden bus business butter button buyer cabinet cable cache cafe cake calendar call
camera camp campaign campus canal candidate candle canvas cap capacity capital captain caption car
carbon card career carpet carrier cart case cash cast castle cat catalog category cause ceiling cell
center certificate chain chair chairman challenge champion chance change channel chapter character
charge chart chat check checklist checkpoint cheese chemical chest chicken chief child chip chocolate
choice church cinema circle citizen city claim class classroom clause clerk client cliff climate
clinic clock closet cloud club cluster coach coast coat code coffee coin collar colleague collection
college color column combination comfort command comment commission commit committee communication
community company comparison compass competition complaint component compromise computer concept
concern concert conclusion condition conference confidence configuration conflict connection
consensus consequence console constant constraint consultant consumer contact container content
contest context contract contribution control convention conversation cook cookie copy core corner
corporation correction cost cottage cotton couch council counter country county couple courage
course court cousin cover coverage cow crack craft crash cream creator credit crew crisis criterion
critic crop cross crowd crown cup curiosity currency curve cushion customer cycle dad damage dance
danger dashboard data database date daughter day deadline deal dealer debate debt decade decision
deck declaration decline decoder default defect defense deficit definition degree delay delegate
delivery demand democracy demo department departure dependency deposit depth deputy description
desert design designer desire desk destination detail detective developer device diagram dialog
diamond diary dictionary diet difference difficulty dimension dinner direction director directory
dirt disaster discipline discount discovery discussion disease disk dispatch display dispute
distance distinction distribution district diversity dividend division doctor document dog domain
door dot draft drama drawer drawing dream dress drink driver drop drum duck duration duty eagle ear
earth ease economy edge edition editor education effect efficiency effort egg election electricity
element elevator email embassy emergency emotion emphasis employee employer encoder encounter end
endpoint enemy energy engine engineer entity entrance entry envelope environment episode equipment
era error escape essay estate estimate evening event evidence exam example exception exchange
excitement excuse executive exercise exhibit exit expansion expectation expense experience
experiment expert explanation export exposure expression extension extent extract eye fabric face
facility fact factor factory failure fairness faith family fan farm farmer fashion fault favor fear
feature fee feedback feeling fence festival fever field figure file film filter finding finger
finish fire firewall firm fish fix flag flame flavor fleet flight floor flow flower fluid focus
folder folk food foot force forecast forest fork form format formula fortune forum foundation
fountain fragment frame framework freedom frequency friend friendship front fruit fuel function
fund funding furniture future gallery game gap garage garden gate gateway gear gene generation
gift girl glass goal gold golf government grade grain grammar grant graph grass gravity grid ground
group growth guarantee guard guest guide guideline guitar gym habit hair hall hammer hand handle
handler harbor hardware harm hat head header headline health hearing heart heat height helicopter
helmet help hero highway hill hint history hobby hold hole holiday home honey hook hope horizon
horse hospital host hotel hour house household housing hub human humor hunger husband hypothesis
ice idea identifier identity image impact implementation import impression improvement incentive
incident income increase index indicator industry infant inflation influence information
infrastructure ingredient initiative injury ink inn input inquiry insect insight inspection
inspector instance instinct institution instruction instrument insurance integration intention
interaction interest interface interior internet interval interview introduction invention
inventory investment investor invitation invoice island issue item jacket job joint joke journal
journey judge judgment juice jump junction jury justice kernel key keyboard kid kitchen knee knife
knowledge label laboratory ladder lake lamp land landscape language laptop laser latency launch
lawyer layer layout leader leadership leaf league lease lecture ledger leg legend length lesson
letter level library license lid lift light limit line link lion liquid list listener literature
load loan lobby location lock log logic loop loss lot love lunch machine magazine magnet mail
maintenance major majority maker mall manager mandate manifest manner manual manufacturer map
margin mark market marriage mask mass master match material matrix matter maximum meal meaning
measure measurement meat mechanism media medicine meeting member membership memory menu merchant
merge message metal method metric middle midnight migration milestone milk mind mine minimum
minister minute mirror mission mistake mixture mobile mode model module moment momentum monitor
month mood moon morning mortgage motor mountain mouse mouth move movement movie mud muscle museum
music mystery name narrative nation native nature neck need negotiation neighbor neighborhood nerve
nest network newspaper night node noise note notebook notice notification novel number nurse
object objective obligation observation occasion ocean offer office officer offset oil onion
opening operation operator opinion opportunity opposition option orange orbit order organization
origin outcome outline output oven owner package packet page pain paint painting pair palace panel
paper paragraph parameter parent park parser part participant partner party passage passenger
passport password past patch path patience patient pattern pause payload payment peace peak pen
penalty pencil pension people pepper percentage perception performance period permission person
perspective phase phone photo phrase physics piano picture piece pier pig pillow pilot pipe
pipeline pitch pizza place plan plane planet plant plastic plate platform player playlist plot
pocket poem poet point pointer policy politics poll pond pool population port portal portfolio
position possibility post pot potato pound poverty powder power practice prediction preference
premium preparation presence presentation president press pressure price pride priest principle
print printer priority prison privacy prize probe problem procedure process processor producer
product profession professor profile profit program progress project promise promotion prompt
proof property proposal prospect protection protein protest protocol provider province proxy
publication publisher pull pulse pump punishment purchase purpose push puzzle quality quantity
quarter queen query question queue quota quote race radar radio rail rain range rank rate ratio
reaction reader reading reality reason receipt reception recipe recognition recommendation record
recovery recruit reduction reference reflection reform refrigerator region register regulation
relation relationship release relief religion reminder rent repair replacement replica reply
report repository representative reputation request requirement rescue research reservation
resident resolution resource response responsibility rest restaurant result retirement return
revenue review revision reward rhythm rice rider ring risk river road robot rock role roof room
root rope rose route router routine row rule runner runtime sail salad salary sale salt sample
sand sandwich satellite satisfaction sauce savings scale scanner scenario scene schedule schema
scheme scholar school science scope score screen script sea search season seat second secret
secretary section sector security seed segment selection senate sender sense sensor sentence
sequence series server service session setting settlement shadow shape share shelf shell shift
ship shirt shock shoe shop shortcut shot shoulder show shower sibling side sign signal signature
silence silver simulation singer sister site situation size sketch skill skin sky sleep slice
slide slot snapshot snow soap society socket sock software soil soldier solution song sort soul
sound soup source space speaker specialist specification speech speed spell sphere spirit sponsor
spot spring square squad stack staff stage stair stake standard star start state statement
station statistic status step stick stock stomach stone storage store storm story strategy
stream street strength stress stretch string stroke structure student studio study style subject
submission subscription substance suburb success sugar suggestion suit summary summer summit sun
supermarket supplier supply support surface surgery surprise survey suspect switch symbol sympathy
symptom syntax system table tablet tag tail talent talk tank tape target task taste tax tea
teacher team tear technique technology telephone television temperature template temple tenant
tendency tennis tension term terminal territory test testimony text texture theme theory therapy
thing thought thread threat threshold throat ticket tide tile timeline timer timestamp tip title
toast token tolerance tomato tone tongue tool tooth top topic total touch tour tourist tower town
toy trace track trade tradition traffic trail train trainer transaction transfer transition
translation transport trap tray treasure treatment tree trend trial triangle trigger trip trouble
truck trust truth tube tune tunnel turn tutor twin type uncle union unit universe university
update upgrade upload usage user utility vacation valley value van variable variation variety
vector vehicle vendor venue verdict version vessel video view viewer village violence visa
visibility vision visit visitor voice volume volunteer vote voucher wage wall wallet war warehouse
warning washer waste watch water wave way weakness wealth weapon weather web website wedding week
weekend weight welcome wheel widget width wife wind window wine wing winner winter wire witness
woman wood word work worker workflow workshop world worry wrapper writer yard year yield youth zone
`

// massNouns do not take a plural form in the prose templates.
const massNounList = `
advice information evidence equipment furniture knowledge luggage research software hardware
traffic feedback progress weather homework data music money news`

const verbList = `
accept access account achieve acknowledge acquire act adapt add adjust admire admit adopt advance
advise afford agree aim alert align allocate allow alter analyze announce annotate answer
anticipate apologize appear append apply appoint appreciate approach approve archive argue arrange
arrest arrive ask assemble assert assess assign assist assume attach attack attempt attend attract
audit authorize automate avoid await backfill balance ban bake bear beat become beg begin believe
belong bend benefit bind bite blame bless block blow boil book boost borrow bounce break breathe
bring broadcast browse build bump burn buy calculate calibrate call cancel capture care carry cast
catch celebrate centralize challenge change charge chase chat check cheer choose cite claim clarify
classify clean clear click climb clip close coach collapse collect combine come comment commit
communicate compare compensate compete compile complain complete comply compose compress compute
concentrate conclude confirm connect consider consist consolidate construct consult consume contact
contain continue contribute control convert convince cook coordinate copy correct cost count cover
crash create criticize cross crush cry cut cycle damage dance deal debate debug decide declare
decline decode decorate decrease dedicate defend define delay delegate delete deliver demand
demonstrate deny depend deploy deprecate derive describe deserve design desire destroy detach
detect determine develop diagnose dig direct disable disagree disappear discover discuss dismiss
dispatch display distribute dive divide document dominate double doubt download drag draw dream
dress drift drink drive drop dump earn ease eat edit educate elect eliminate embed emerge emit
emphasize employ empty enable encode encourage end endorse enforce engage enhance enjoy enqueue
ensure enter entertain equip escalate escape establish estimate evaluate evict examine exceed
exchange exclude execute exercise exist expand expect experiment expire explain explore export
expose express extend extract face fail fall fear feed feel fetch fight file fill filter finalize
find finish fire fit fix flag flatten flip float flush fly focus fold follow forbid force forecast
forget forgive fork form format forward found frame free freeze fund gain gather generate get give
go govern grab graduate grant greet grow guarantee guard guess guide handle hang happen harvest
hash hate head heal hear heat help hesitate hide highlight hire hit hold hope host hunt hurry hurt
identify ignore illustrate imagine implement import impose improve include incorporate increase
index indicate influence inform inherit initialize inject insert insist inspect install instruct
integrate intend interpret interrupt introduce invest investigate invite invoke involve isolate
join judge jump justify keep kick kill knock know label land last laugh launch lay lead lean learn
leave lend let license lift light like limit link list listen live load locate lock log look lose
love maintain make manage map mark marry match matter measure meet mention merge migrate mind
minimize mirror miss mitigate mix model modify monitor mount move multiply name navigate need
negotiate nest normalize note notice notify obey object observe obtain occupy occur offer offload
open operate oppose optimize order organize orient outline overcome override overwrite own pack
paint parse participate partition pass patch pause pay perform permit persist persuade pick pin
ping place plan plant play plead plot plug point poll populate post postpone pour practice praise
pray predict prefer prepare present preserve press pretend prevent price print prioritize proceed
process produce profile program prohibit project promise promote prompt propagate propose protect
prove provide provision prune publish pull pump punch purchase purge push put qualify query
question queue quit quote race raise rank rate reach react read realize rebase rebuild recall
receive recognize recommend reconcile record recover recruit recycle redeploy redirect reduce
refactor refer reflect refresh refuse regard register regret reject relate relax release rely
remain remember remind remove rename render renew rent reorder repair repeat replace reply report
represent reproduce request require rerun rescue research resemble reserve reset reside resist
resize resolve respond rest restart restore restrict resume retain retire retrieve retry return
reveal reverse review revise revoke reward rewrite ride ring rise roll rollback rotate round route
rule run rush sample satisfy save scale scan schedule score scrape scroll search secure see seek
seem select sell send separate serialize serve set settle shake shape share shift ship shoot shop
shout show shrink shut sign simplify simulate sing sink sit sketch skip sleep slide slip smell
smile snapshot solve sort sound spawn speak specify spell spend split spread squash stabilize stack
stage stand stare start state stay steal step stick stop store stream strengthen stress stretch
strike strip structure struggle study submit subscribe succeed suffer suggest suit summarize
supply support suppose surprise surround survive suspect suspend sustain swap sweep swim switch
sync tackle tag take talk tap target taste teach tear tell tend terminate test thank think threaten
throttle throw tidy tie time toggle tolerate touch trace track trade train transfer transform
translate transmit trap travel treat trigger trim trust try tune turn type uncover underestimate
understand undo unify uninstall unlock unpack unwrap update upgrade upload urge use validate value
verify view visit vote wait wake walk want warm warn wash watch wear weigh welcome whisper win wipe
wish withdraw wonder work worry wrap write yield zip
`

// irregularVerbs are "base past participle" triples.
const irregularVerbs = `
arise arose arisen|bear bore borne|beat beat beaten|become became become|begin began begun|bend bent bent
bind bound bound|bite bit bitten|blow blew blown|break broke broken|bring brought brought
broadcast broadcast broadcast|build built built|buy bought bought|cast cast cast|catch caught caught
choose chose chosen|come came come|cost cost cost|cut cut cut|deal dealt dealt|dig dug dug
dive dove dived|draw drew drawn|dream dreamed dreamed|drink drank drunk|drive drove driven|eat ate eaten|fall fell fallen
feed fed fed|feel felt felt|fight fought fought|find found found|fly flew flown|forbid forbade forbidden
forecast forecast forecast|forget forgot forgotten|forgive forgave forgiven|freeze froze frozen
get got gotten|give gave given|go went gone|grow grew grown|hang hung hung|hear heard heard|hide hid hidden
hit hit hit|hold held held|hurt hurt hurt|keep kept kept|know knew known|lay laid laid|lead led led
leave left left|lend lent lent|let let let|light lit lit|lose lost lost|make made made|mean meant meant
meet met met|overcome overcame overcome|override overrode overridden|overwrite overwrote overwritten
pay paid paid|put put put|quit quit quit|read read read|rebuild rebuilt rebuilt|rerun reran rerun
reset reset reset|rewrite rewrote rewritten|ride rode ridden|ring rang rung|rise rose risen|run ran run
say said said|see saw seen|seek sought sought|sell sold sold|send sent sent|set set set|shake shook shaken
shoot shot shot|show showed shown|shrink shrank shrunk|shut shut shut|sing sang sung|sink sank sunk
sit sat sat|sleep slept slept|slide slid slid|speak spoke spoken|spend spent spent|split split split
spread spread spread|stand stood stood|steal stole stolen|stick stuck stuck|strike struck struck
swim swam swum|sweep swept swept|take took taken|teach taught taught|tear tore torn|tell told told
think thought thought|throw threw thrown|understand understood understood|undo undid undone
wake woke woken|wear wore worn|win won won|withdraw withdrew withdrawn|write wrote written
underestimate underestimated underestimated|fit fit fit|spell spelled spelled`

// doublingVerbs double their final consonant before -ed and -ing.
const doublingVerbs = `
ban beg chat clip commit drag drop flag flip grab hug jog log map nod pin plan plot plug prefer
refer rob scan ship shop skip slip snap stop strip submit swap tag tap trap trim wrap zip admit
occur permit control patrol propel compel upset pat rub stab step hop sum dip
debug embed emit format program regret transfer transmit unwrap snapshot`

const adjectiveList = `
able absolute abstract academic acceptable accessible accurate active actual acute adaptive
additional adequate adjacent administrative advanced adverse aggressive agile alert alternate
ambiguous ambitious ample ancient angry annual anonymous apparent appropriate approximate arbitrary
asynchronous atomic attractive automatic available average aware awkward bad balanced bare basic
beautiful beneficial best better big bitter blank blind blue bold boring brave brief bright
brilliant brittle broad broken brown busy calm capable careful casual cautious central certain
cheap chemical chief civil classic clean clear clever close cloudy coarse cold collective
colorful comfortable commercial common compact comparable compatible competitive complete complex
comprehensive compressed concise concrete concurrent confident confidential confused conscious
conservative consistent constant constructive contemporary content continuous conventional cool
corporate correct costly courageous creative credible critical crowded crucial cultural curious
current custom cute daily damaged dangerous dark dead dear decent decisive dedicated deep default
defensive definite deliberate delicate dense dependent deprecated desperate detailed deterministic
different difficult digital diligent direct dirty distinct distributed diverse domestic dominant
double down dramatic dry due dull durable dynamic eager early easy economic educational effective
efficient elaborate elastic elderly electric electronic elegant eligible embedded emotional
empty encrypted endless enormous entire environmental equal equivalent essential eternal ethical
eventual evident exact excellent exceptional excessive exciting exclusive existing exotic expected
expensive experimental expert explicit exposed extended external extra extreme fair faithful
familiar famous fancy fantastic far fast fatal favorable federal fierce final financial fine
finite firm fiscal fit flat flexible fluent flush foreign formal former fortunate forward fragile
free frequent fresh friendly frozen full functional fundamental funny future gentle genuine giant
global golden good gradual grand grateful great green gross growing guilty handy happy hard
harmful harsh healthy heavy helpful hidden high historic holistic honest horizontal hostile hot
huge humble hungry hybrid ideal identical idle illegal immediate immense immutable implicit
important impossible impressive inactive incoming incomplete incorrect incremental independent
indirect individual industrial inevitable informal initial inner innocent innovative intact
integral intelligent intense intentional interactive interested interesting interim internal
international intuitive invalid invisible isolated joint junior key kind large late lateral
lazy lean legacy legal legitimate lengthy liberal light likely limited linear liquid literal
little live local logical lonely long loose loud lovely low loyal lucky magnetic main major
manual marginal massive mature maximum meaningful mechanical medical medium mental mere messy
mild military minimal minor missing mobile moderate modern modest modular moral mutable mutual
narrow national native natural nearby neat necessary negative nervous neutral new nice noble noisy
nominal normal notable novel numerous objective obscure obvious occasional odd offline official
old online open operational optimal optional oral ordinary organic original orphaned outer
outstanding overall overdue parallel partial particular passive patient peaceful peculiar perfect
periodic permanent persistent personal physical plain plausible pleasant plenty polite political
poor popular portable positive possible potential powerful practical precise predictable
preliminary premium present pretty previous primary prime principal prior private proactive
probable productive professional profitable profound progressive prominent prompt proper
proportional protective proud provisional public pure quick quiet radical random rapid rare raw
ready real realistic reasonable recent reckless recursive redundant regional regular relative
relevant reliable reluctant remote repeated representative resilient resistant responsible
responsive restricted retired rich rigid robust rough round routine royal rude rural sacred sad
safe scalable scarce scattered scientific seamless secondary secret secure selective senior
sensible sensitive separate sequential serious severe shallow sharp short shy significant silent
silly similar simple sincere single slight slim slow small smart smooth social soft solid sophisticated
sound sparse spatial special specific spectacular stable stale standard static steady steep sticky
stiff strange strategic strict striking strong structural stubborn subtle successful sudden
sufficient suitable super superb supreme sure surprising suspicious sweet swift symbolic
synchronous systematic tall technical temporary tender terrible thick thin thorough tidy tight
tiny tired total tough toxic traditional transparent tremendous tricky trivial true typical ugly
ultimate unable unclear uncommon unexpected unfair unhappy uniform unique universal unknown
unlikely unnecessary unstable unusual upper upset urban urgent useful useless usual vague valid
valuable variable vast verbose vertical viable vibrant virtual visible visual vital vivid volatile
vulnerable warm weak wealthy weekly weird welcome wet whole wide wild willing wise wonderful
wooden worried worthy wrong young zealous
`

const adverbList = `
absolutely accidentally actually again almost already also always annually apparently
approximately automatically barely basically briefly broadly carefully casually certainly clearly
closely commonly completely consistently constantly correctly currently daily deeply definitely
deliberately directly easily effectively efficiently entirely equally especially essentially
eventually exactly explicitly extremely fairly finally firmly fortunately frankly frequently fully
generally gently gradually greatly happily hardly heavily highly honestly hopefully immediately
implicitly importantly increasingly indeed independently initially instantly internally jointly
largely lately likely literally locally loosely manually merely mostly mutually naturally nearly
necessarily neatly normally notably obviously occasionally officially only openly originally
otherwise overall partially particularly perhaps periodically permanently personally physically
possibly potentially precisely presumably previously primarily probably promptly properly
quickly quietly randomly rapidly rarely readily really reasonably recently regularly relatively
reliably remotely repeatedly roughly safely seriously sharply shortly significantly silently
simply slightly slowly smoothly solely somewhat soon specifically steadily strictly strongly
successfully suddenly surely temporarily thoroughly tightly today together truly typically
ultimately unexpectedly unfortunately uniformly usually vaguely virtually visibly widely
yesterday tomorrow weekly
`

const firstNames = `
Aaron Abigail Adam Adrian Aisha Alan Alba Alejandro Alex Alice Amara Amir Ana Andrea Andrei Angela
Anika Anna Arjun Astrid Ava Ben Bianca Bilal Bruno Camila Carla Carlos Carmen Chen Chloe Chris
Clara Daniel Dara David Diego Dmitri Elena Eli Elif Emma Enzo Erik Esther Ethan Eva Farah Felix
Fatima Finn Gabriel Grace Hana Hannah Hassan Helena Hugo Ian Ibrahim Ines Ingrid Isaac Isabel
Ivan Jack Jana Javier Jin Joao Jonas Jordan Jose Julia Kai Karim Kate Kenji Kim Lara Laura Leila
Leo Liam Lina Lucas Lucia Luis Maya Marco Maria Marta Mateo Max Mei Mia Miguel Mila Mina Mohamed
Nadia Naomi Nikolai Nina Noah Nora Olga Omar Oscar Pablo Paula Pedro Pia Priya Rafael Rania Ravi
Rosa Ruth Sam Sara Sebastian Selin Sofia Sophie Stefan Tariq Teresa Theo Tomas Uma Valentina
Victor Vera Wei Yara Yusuf Zara Zoe José Zoë Søren Chloé Björn Inés Ümit`

const lastNames = `
Abbott Adeyemi Alvarez Andersen Baker Bauer Becker Bianchi Brennan Castillo Chandra Costa Dubois
Eriksson Fischer Fontaine Garcia Gomez Haddad Hansen Hoffmann Ibarra Ivanova Jensen Kaur Kowalski
Kumar Larsen Lindqvist Lopez Martin Moreau Müller Murphy Nakamura Nguyen Novak Núñez Okafor Olsen Ødegaard Park Patel
Petrov Quinn Rossi Russo Sato Schmidt Silva Smith Tanaka Torres Varga Weber Wong Yilmaz Zhang`

const placeList = `
Amsterdam Athens Austin Barcelona Berlin Bogota Boston Brisbane Brussels Budapest Cairo Chicago
Copenhagen Dallas Denver Dublin Edinburgh Frankfurt Geneva Glasgow Hamburg Helsinki Istanbul
Jakarta Kyoto Lagos Lima Lisbon Lyon Madrid Manchester Melbourne Milan Montreal Mumbai Munich
Nairobi Oslo Paris Porto Prague Quebec Reykjavík Kraków Malmö Riga Rotterdam Santiago Seattle Seoul Singapore Stockholm
Sydney Taipei Tallinn Tokyo Toronto Valencia Vancouver Vienna Vilnius Warsaw Wellington Zurich`

// techTerms name software and operations things; they show up in prose as
// modifiers ("the Postgres replica") and in code identifiers.
const techTerms = `
API CLI CPU DNS GPU HTTP JSON JWT OAuth SDK SQL SSH TLS URL YAML Kafka Redis Postgres MySQL SQLite
Kubernetes Docker Terraform Ansible Nginx Envoy Grafana Prometheus Jaeger Sentry Datadog GitHub GitLab
Jenkins Bazel Gradle Maven npm pnpm Webpack Vite React Svelte Django Flask FastAPI Rails Spring
Express Node Deno Rust Go Python TypeScript Java Kotlin Swift Scala Elixir Haskell Lua Bash S3 EC2
Lambda CloudFront BigQuery Snowflake Airflow Spark Flink Elasticsearch OpenSearch RabbitMQ NATS
etcd Consul Vault Istio Linkerd Helm ArgoCD Tekton Celery Sidekiq gRPC GraphQL WebSocket protobuf
staging production canary sandbox localhost webhook cron daemon sidecar namespace pod ingress
replica shard partition lockfile monorepo changelog hotfix rollback migration`

const monthList = `January February March April May June July August September October November December`

const dayList = `Monday Tuesday Wednesday Thursday Friday Saturday Sunday`

const prepList = `about above across after against along among around at before behind below beneath beside
between beyond by despite during for from inside into near of off on onto outside over past
through throughout toward under underneath until upon via with within without`

func fields(s string) []string { return strings.Fields(s) }
